// Package awsdata asks AWS about instance types and prices: EC2's
// DescribeInstanceTypes, DescribeInstanceTypeOfferings and
// DescribeSpotPriceHistory, and the Pricing API's GetProducts. It returns
// plain data (instance types in the record shape, zones, prices) and has
// no caches and no fallbacks; those are its callers' policy.
//
// It is shared by the live catalog (package live) and the catalog
// generator's -refresh-regions mode. It must not import package catalog:
// catalog embeds the file the generator writes, so the generator cannot
// depend on it (see package record).
package awsdata

import (
	"context"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
)

// EC2API is the part of the EC2 client used here.
type EC2API interface {
	DescribeInstanceTypes(context.Context, *ec2.DescribeInstanceTypesInput, ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error)
	DescribeInstanceTypeOfferings(context.Context, *ec2.DescribeInstanceTypeOfferingsInput, ...func(*ec2.Options)) (*ec2.DescribeInstanceTypeOfferingsOutput, error)
	DescribeSpotPriceHistory(context.Context, *ec2.DescribeSpotPriceHistoryInput, ...func(*ec2.Options)) (*ec2.DescribeSpotPriceHistoryOutput, error)
}

// PricingAPI is the part of the Pricing client used here. The client must
// talk to the Pricing endpoint of PricingRegion, not to the region priced.
type PricingAPI interface {
	GetProducts(context.Context, *pricing.GetProductsInput, ...func(*pricing.Options)) (*pricing.GetProductsOutput, error)
}

// PricingRegion is the region whose Pricing API endpoint serves prices for
// region: the API lives in a few regions only and answers for all.
func PricingRegion(region string) string {
	if strings.HasPrefix(region, "cn-") {
		return "cn-northwest-1"
	}
	return "us-east-1"
}
