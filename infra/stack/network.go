package stack

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// Network is where the functions run in VPC mode (Config.InVPC): the
// cluster's VPC, the given subnets, and a security group of their own that
// the cluster's security group admits on 443. Outside VPC mode it is nil
// and the functions reach the API endpoint over the internet, so the
// endpoint must be public to Lambda.
type Network struct {
	Vpc           awsec2.IVpc
	Subnets       []awsec2.ISubnet
	SecurityGroup awsec2.SecurityGroup
	// Endpoints are the interface endpoints the stack made (VpcEndpoints).
	Endpoints []awsec2.InterfaceVpcEndpoint
}

// vpcEndpointServices are the AWS APIs the functions call (pkg/wiring:
// EC2, SSM, EKS) and so need an endpoint for in subnets without a NAT.
// Nothing else is called from inside a function: SQS and EventBridge
// reach the functions through the Lambda service (event source mappings,
// rules), logs and EMF metrics leave through Lambda's own log stream, and
// the EKS token is an STS URL presigned locally, checked by EKS, never
// sent to STS. The Pricing API has no endpoint in most regions: without a
// NAT the on-demand prices are the embedded catalog's (pkg/catalog/live
// falls back to them), spot prices still come from EC2.
//
// A function, not a package variable: each service is a jsii call, and one
// made while the package initializes would start the Node.js kernel in the
// wrong directory (infra/main.go changes to the repository root first).
func vpcEndpointServices() []struct {
	id      string
	service awsec2.InterfaceVpcEndpointAwsService
} {
	return []struct {
		id      string
		service awsec2.InterfaceVpcEndpointAwsService
	}{
		{"Ec2Endpoint", awsec2.InterfaceVpcEndpointAwsService_EC2()},
		{"SsmEndpoint", awsec2.InterfaceVpcEndpointAwsService_SSM()},
		{"EksEndpoint", awsec2.InterfaceVpcEndpointAwsService_EKS()},
	}
}

// defineNetwork builds the Network of VPC mode; nil outside it.
func (s *JoistStack) defineNetwork() {
	c := s.Config
	if !c.InVPC() {
		return
	}
	vpc := awsec2.Vpc_FromVpcAttributes(s.Stack, jsii.String("ClusterVpc"), &awsec2.VpcAttributes{
		VpcId: jsii.String(c.VpcID),
		// Unused (the subnets are given by id), but required.
		AvailabilityZones: s.Stack.AvailabilityZones(),
	})
	n := &Network{Vpc: vpc}
	for i, id := range c.SubnetIDs {
		n.Subnets = append(n.Subnets, awsec2.Subnet_FromSubnetId(s.Stack, jsii.String(fmt.Sprintf("Subnet%d", i)), jsii.String(id)))
	}
	n.SecurityGroup = awsec2.NewSecurityGroup(s.Stack, jsii.String("FunctionSecurityGroup"), &awsec2.SecurityGroupProps{
		Vpc:         vpc,
		Description: jsii.String("Joist functions of cluster " + c.ClusterName + " (egress to the API endpoint and AWS APIs)"),
		// Egress only: nothing calls in to a function.
		AllowAllOutbound: jsii.Bool(true),
	})
	if c.ClusterSecurityGroupID != "" {
		awsec2.NewCfnSecurityGroupIngress(s.Stack, jsii.String("ClusterApiFromFunctions"), &awsec2.CfnSecurityGroupIngressProps{
			GroupId:               jsii.String(c.ClusterSecurityGroupID),
			IpProtocol:            jsii.String("tcp"),
			FromPort:              jsii.Number(443),
			ToPort:                jsii.Number(443),
			SourceSecurityGroupId: n.SecurityGroup.SecurityGroupId(),
			Description:           jsii.String("Joist functions to the Kubernetes API endpoint"),
		})
	}
	if c.VpcEndpoints {
		for _, e := range vpcEndpointServices() {
			ep := awsec2.NewInterfaceVpcEndpoint(s.Stack, jsii.String(e.id), &awsec2.InterfaceVpcEndpointProps{
				Vpc:               vpc,
				Service:           e.service,
				Subnets:           &awsec2.SubnetSelection{Subnets: &n.Subnets},
				PrivateDnsEnabled: jsii.Bool(true),
				// Not open to the whole VPC (its CIDR is unknown without
				// a lookup): only the functions' group may connect.
				Open: jsii.Bool(false),
			})
			ep.Connections().AllowDefaultPortFrom(n.SecurityGroup, jsii.String("Joist functions"))
			n.Endpoints = append(n.Endpoints, ep)
		}
	}
	s.Network = n
}

// placeInVPC puts a function's props into the Network and gives its role
// what the Lambda service needs to attach the function's network
// interfaces.
func (s *JoistStack) placeInVPC(props *awslambda.FunctionProps, role awsiam.Role) {
	n := s.Network
	if n == nil {
		return
	}
	props.Vpc = n.Vpc
	props.VpcSubnets = &awsec2.SubnetSelection{Subnets: &n.Subnets}
	props.SecurityGroups = &[]awsec2.ISecurityGroup{n.SecurityGroup}
	// The Lambda service, not the function's code, creates and deletes
	// the ENIs with the execution role; the AWS managed policy is the one
	// AWS keeps current for that (CDK attaches it to the roles it makes
	// itself; these roles are the stack's own).
	vpcAccess := awsiam.ManagedPolicy_FromAwsManagedPolicyName(jsii.String("service-role/AWSLambdaVPCAccessExecutionRole"))
	role.AddManagedPolicy(vpcAccess)
	cdknag.NagSuppressions_AddResourceSuppressions(role, &[]*cdknag.NagPackSuppression{{
		Id:        jsii.String("AwsSolutions-IAM4"),
		Reason:    jsii.String("VPC mode: the Lambda service attaches the function's network interfaces with AWSLambdaVPCAccessExecutionRole, the policy AWS maintains for exactly that"),
		AppliesTo: &[]interface{}{jsii.String("Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole")},
	}}, jsii.Bool(true))
}
