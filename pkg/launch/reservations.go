package launch

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"

	"github.com/joist-dev/joist/pkg/model"
)

// Reservations lists the active capacity reservations (ODCRs and capacity
// blocks) the node class's capacityReservationSelectorTerms select, sorted
// by id, with how many instances each takes now. A class without terms
// selects none and costs no call.
//
// The terms resolve as Karpenter v1.15's do: a term with an id asks for
// that reservation (one EC2 does not know is simply absent); a term with
// tags or instance match criteria asks for the reservations carrying all
// the tags (a value "*" means the key must exist), narrowed by the owner
// and the match criteria when given; a term with only an owner selects
// nothing. Terms are OR'ed. Only active reservations that have not ended
// are kept.
//
// Nothing is cached, unlike subnets and security groups: the available
// counts change with every launch and termination (ours and anyone's
// sharing the reservation), and a stale count would plan a node into a
// full reservation, whose launch then fails and costs a second planning
// pass. One call per term per decision is cheap next to that.
func (l *Launcher) Reservations(ctx context.Context, nc *model.NodeClass) ([]Reservation, error) {
	if nc == nil || len(nc.CapacityReservationSelector) == 0 {
		return nil, nil
	}
	seen := map[string]Reservation{}
	now := l.now()
	for i, term := range nc.CapacityReservationSelector {
		for _, in := range reservationQueries(term) {
			p := ec2.NewDescribeCapacityReservationsPaginator(l.EC2, in)
			for p.HasMorePages() {
				page, err := p.NextPage(ctx)
				if err != nil {
					if isReservationNotFound(err) && len(in.CapacityReservationIds) > 0 {
						break // a term naming a reservation that is gone selects nothing
					}
					return nil, fmt.Errorf("node class %q: spec.capacityReservationSelectorTerms[%d]: describe capacity reservations: %w", nc.Name, i, err)
				}
				for _, cr := range page.CapacityReservations {
					if cr.State != ec2types.CapacityReservationStateActive {
						continue
					}
					r := reservationFromEC2(cr)
					if !r.End.IsZero() && !r.End.After(now) {
						continue
					}
					seen[r.ID] = r
				}
			}
		}
	}
	out := make([]Reservation, 0, len(seen))
	for _, r := range seen {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// reservationQueries are the DescribeCapacityReservations calls one term
// makes (Karpenter's QueriesFromSelectorTerms): by id, and by tags and
// match criteria with the owner, each only for active reservations.
func reservationQueries(t model.CapacityReservationTerm) []*ec2.DescribeCapacityReservationsInput {
	active := ec2types.Filter{Name: aws.String("state"), Values: []string{string(ec2types.CapacityReservationStateActive)}}
	var out []*ec2.DescribeCapacityReservationsInput
	if t.ID != "" {
		// EC2 takes no MaxResults with explicit ids.
		out = append(out, &ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{t.ID}, Filters: []ec2types.Filter{active}})
	}
	if len(t.Tags) == 0 && t.InstanceMatchCriteria == "" {
		return out
	}
	fs := []ec2types.Filter{active}
	if t.OwnerID != "" {
		fs = append(fs, ec2types.Filter{Name: aws.String("owner-id"), Values: []string{t.OwnerID}})
	}
	keys := make([]string, 0, len(t.Tags))
	for k := range t.Tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if v := t.Tags[k]; v == "*" || v == "" {
			fs = append(fs, ec2types.Filter{Name: aws.String("tag-key"), Values: []string{k}})
		} else {
			fs = append(fs, ec2types.Filter{Name: aws.String("tag:" + k), Values: []string{v}})
		}
	}
	if t.InstanceMatchCriteria != "" {
		fs = append(fs, ec2types.Filter{Name: aws.String("instance-match-criteria"), Values: []string{t.InstanceMatchCriteria}})
	}
	return append(out, &ec2.DescribeCapacityReservationsInput{Filters: fs, MaxResults: aws.Int32(1000)})
}

func reservationFromEC2(cr ec2types.CapacityReservation) Reservation {
	r := Reservation{
		ID: aws.ToString(cr.CapacityReservationId), InstanceType: aws.ToString(cr.InstanceType), Zone: aws.ToString(cr.AvailabilityZone),
		OwnerID: aws.ToString(cr.OwnerId), Type: string(cr.ReservationType), MatchCriteria: string(cr.InstanceMatchCriteria),
		Available: int(aws.ToInt32(cr.AvailableInstanceCount)), End: aws.ToTime(cr.EndDate),
	}
	if r.Type == "" {
		r.Type = string(ec2types.CapacityReservationTypeDefault)
	}
	return r
}

func isReservationNotFound(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "InvalidCapacityReservationId.NotFound"
}

// CapacityBlockEndNotice is how long before its end a capacity block
// counts as ending (Karpenter's 40 minutes): EC2 ends a block's instances
// at its end time, so nothing new is planned into it, and the nodes in it
// are replaced while there is time (drift: the reaper leaves it out of
// the class's reservations, disruption.ClassFacts.ReservationIDs).
const CapacityBlockEndNotice = 40 * time.Minute

// Ending tells whether the reservation is a capacity block within
// CapacityBlockEndNotice of its end. An ODCR's end date only stops new
// launches; its instances run on as on-demand.
func (r Reservation) Ending(now time.Time) bool {
	return r.Type == ReservationTypeCapacityBlock && !r.End.IsZero() && !now.Before(r.End.Add(-CapacityBlockEndNotice))
}
