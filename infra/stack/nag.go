package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// wildcardReasons say why each kind of wildcard in the functions'
// statements (pkg/iampolicy) cannot be narrower: cdk-nag's AwsSolutions-IAM5
// flags every one, and each suppression carries its reason here, next to
// the roles it applies to. The regexes match cdk-nag's rendering of the
// resource ("Resource::arn:<AWS::Partition>:ec2:<region>:...").
var wildcardReasons = []struct{ regex, reason string }{
	{`^Resource::\*$`,
		"EC2 Describe* calls (instances, instance status, subnets, security groups, images, instance types, offerings, spot prices, capacity reservations, placement groups) and the Pricing API support no resource-level permissions; the statements are limited by aws:RequestedRegion"},
	{`^Resource::arn:<AWS::Partition>:ec2:[^:]*:\*:(subnet|security-group|capacity-reservation|placement-group)/\*$`,
		"CreateFleet/RunInstances must name the subnets, security groups, capacity reservations and placement group the node class selects at run time, which may be shared from another account (RAM); what they launch is tag-conditioned"},
	{`^Resource::arn:<AWS::Partition>:ec2:[^:]*::(image|snapshot)/\*$`,
		"the AMI (and its snapshots) is chosen by the node class's selector at run time: public EKS-optimized or the account's own images"},
	{`^Resource::arn:<AWS::Partition>:ec2:[^:]*:<AWS::AccountId>:(fleet|instance|volume|network-interface|spot-instances-request|launch-template)/\*$`,
		"ids of resources Joist creates are unknown before creation: creating them requires aws:RequestTag/joist.sh/cluster = this cluster, and using, terminating or deleting them requires aws:ResourceTag/joist.sh/cluster = this cluster"},
	{`^Resource::arn:<AWS::Partition>:ssm:[^:]*::parameter/aws/service/\*$`,
		"read-only: AWS's public parameters naming the EKS-optimized and Bottlerocket AMIs (the node classes' AMI aliases)"},
	{`^Resource::arn:<AWS::Partition>:ssm:[^:]*:<AWS::AccountId>:parameter/joist/[^/]+/\*$`,
		"read-only: the cluster's own spec parameters under /joist/<cluster>/"},
}

// explainWildcards puts the reasons on a function's role.
func explainWildcards(role awsiam.Role) {
	var s []*cdknag.NagPackSuppression
	for _, w := range wildcardReasons {
		s = append(s, &cdknag.NagPackSuppression{
			Id: jsii.String("AwsSolutions-IAM5"), Reason: jsii.String(w.reason),
			AppliesTo: &[]interface{}{&cdknag.RegexAppliesTo{Regex: jsii.String("/" + w.regex + "/")}},
		})
	}
	cdknag.NagSuppressions_AddResourceSuppressions(role, &s, jsii.Bool(true))
}
