// Package ec2sim is Joist's EC2: an in-memory simulator of exactly the EC2
// calls Joist makes, speaking the real EC2 Query API so the unmodified AWS
// SDK for Go v2 talks to it. It exists because the AWS emulator the test
// ground uses (kumo) ignores filters, drops tags and has no CreateFleet,
// launch templates, instance types, offerings, spot prices or images, which
// is most of what a node autoscaler does with EC2.
//
// Use it in-process:
//
//	sim := ec2sim.New(ec2sim.Options{InstanceTypes: types})
//	sim.SeedDefault("hoon-cluster")
//	client := ec2.New(ec2.Options{BaseEndpoint: aws.String(sim.Start(t)), ...})
//
// or as a program (test/ec2sim/cmd/ec2sim) with AWS_ENDPOINT_URL_EC2
// pointing at it.
//
// What it models, and how faithfully:
//
//   - The wire format: form-encoded requests with EC2's list flattening
//     (Name.N, and member names that differ from the API's, such as
//     TagSpecification.N and InstanceId.N), responses as
//     <ActionResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"> with
//     lower-camel elements and <item> lists, errors as
//     <Response><Errors><Error><Code/><Message/></Error></Errors><RequestID/>
//     with the HTTP status that drives the SDK's retries. A parameter the
//     simulator does not model is refused with UnknownParameter and an
//     action it lacks with UnsupportedOperation, so nothing is silently
//     ignored.
//   - Instant CreateFleet: launch templates by ID or name and version,
//     overrides, on-demand and spot targets, the allocation strategies,
//     insufficient capacity per pool with fallback to the next override and
//     per-override errors, partial fulfilment, client-token idempotency,
//     tags from the template and the request, and EC2's own aws: tags.
//   - Capacity reservations (ODCRs and capacity blocks) added by tests:
//     DescribeCapacityReservations with its filters and pagination, and
//     CreateFleet launching into the reservation a launch template targets
//     (matching type and zone, room taken and given back on termination,
//     ReservationCapacityExceeded when full, capacity blocks only with the
//     capacity-block market and target capacity type, the launch
//     authorized on the reservation's ARN); open ODCRs absorb matching
//     untargeted on-demand launches, as on AWS.
//   - Placement groups (cluster, partition, spread) added by tests:
//     DescribePlacementGroups by name, ID and EC2's filters (there is no
//     group-id filter on EC2, so none here), with EC2's errors for unknown
//     (InvalidPlacementGroup.Unknown, by name or ID alike) and malformed
//     (InvalidPlacementGroupId.Malformed) groups; CreateFleet launching
//     into the group a launch template's Placement names (GroupId or
//     GroupName, PartitionNumber), each override refused as EC2 refuses
//     it, in the fleet's errors: a group unknown or not available
//     (InvalidPlacementGroup.Unknown); a partition number on another
//     strategy (InvalidParameterCombination) or beyond the group's
//     partitions (InvalidParameterValue), and with none, the partition of
//     the zone holding the fewest of the group's instances (lowest on a
//     tie); a cluster group kept to the zone of its instances
//     (InvalidPlacementGroup.InUse, EC2's code for it) and refusing
//     burstable and Mac types (InvalidParameterCombination, which
//     DescribeInstanceTypes' supported strategies agree with); a spread
//     group's seven instances per zone (InsufficientInstanceCapacity
//     with EC2's "limit of instances in this spread placement group"
//     message). An instance holds its place until it is terminated. The
//     launch is authorized on the group's ARN (placement-group/<name>).
//     DescribeInstances reports the group and partition and filters on
//     placement-group-name and placement-partition-number.
//   - Instances that go pending, running, shutting-down and terminated on the
//     simulator's clock, stay visible for an hour after termination, take
//     and give back subnet addresses, and can be hidden right after launch
//     (eventual consistency), stuck pending, or terminated by "AWS".
//   - Filters with EC2's wildcard rules (* is zero or more characters, ? is
//     zero or one, backslash escapes), pagination with opaque tokens and
//     EC2's MaxResults bounds (DescribeInstanceTypes pages at 100 even
//     unasked), and EC2's error codes for unknown and malformed IDs.
//   - Fault injection: throttling and server errors before a call acts,
//     responses lost after it acted, capacity per pool.
//   - Inspection: requests per action (Calls) and operations per action
//     (Invocations), CreateFleet requests (CreateFleetCalls) and operations
//     (CreateFleetOperations). The SDK retries an operation on its own,
//     even with no fault injected: when the transport closes a connection
//     under a request (net.ErrClosed, seen on busy machines), the same
//     call is sent again. Tests that count what the code asked count
//     operations; those that count the retries themselves count requests.
//
// It does not authenticate requests (any SigV4 signature is accepted),
// simulate maintain or request fleets, RunInstances, stop/start, volumes,
// network interfaces, or DescribeInstanceAttribute.
package ec2sim
