package awsdata

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
)

// FetchOnDemand asks the Pricing API for Linux, shared-tenancy, on-demand
// prices in region (USD per hour per type). Bare metal types are listed by
// the API as dedicated-tenancy "Compute Instance (bare metal)" products,
// so they are a second query, as in Karpenter; the two run at once. No
// price at all is an error.
func FetchOnDemand(ctx context.Context, p PricingAPI, region string) (map[string]float64, error) {
	queries := [][2]string{
		{"Shared", "Compute Instance"},
		{"Dedicated", "Compute Instance (bare metal)"},
	}
	results := make([]map[string]float64, len(queries))
	errs := make([]error, len(queries))
	var wg sync.WaitGroup
	for i, q := range queries {
		wg.Go(func() {
			results[i], errs[i] = fetchProducts(ctx, p, region, q[0], q[1])
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	prices := map[string]float64{}
	for _, r := range results {
		for k, v := range r {
			prices[k] = v
		}
	}
	if len(prices) == 0 {
		return nil, errors.New("the Pricing API returned no on-demand prices")
	}
	return prices, nil
}

func fetchProducts(ctx context.Context, p PricingAPI, region, tenancy, productFamily string) (map[string]float64, error) {
	term := func(field, value string) pricingtypes.Filter {
		return pricingtypes.Filter{Type: pricingtypes.FilterTypeTermMatch, Field: aws.String(field), Value: aws.String(value)}
	}
	input := &pricing.GetProductsInput{
		ServiceCode:   aws.String("AmazonEC2"),
		FormatVersion: aws.String("aws_v1"),
		Filters: []pricingtypes.Filter{
			term("regionCode", region),
			term("serviceCode", "AmazonEC2"),
			term("preInstalledSw", "NA"),
			term("operatingSystem", "Linux"),
			term("capacitystatus", "Used"),
			term("marketoption", "OnDemand"),
			term("tenancy", tenancy),
			term("productFamily", productFamily),
		},
	}
	prices := map[string]float64{}
	pages := pricing.NewGetProductsPaginator(p, input)
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("GetProducts (%s): %w", productFamily, err)
		}
		for _, item := range out.PriceList {
			name, price, ok := ParsePriceItem(item)
			if ok {
				prices[name] = price
			}
		}
	}
	return prices, nil
}

// priceItem is the part of a Pricing API price list item Joist reads.
type priceItem struct {
	Product struct {
		Attributes struct {
			InstanceType string `json:"instanceType"`
		} `json:"attributes"`
	} `json:"product"`
	Terms struct {
		OnDemand map[string]struct {
			PriceDimensions map[string]struct {
				Unit         string            `json:"unit"`
				PricePerUnit map[string]string `json:"pricePerUnit"`
			} `json:"priceDimensions"`
		} `json:"OnDemand"`
	} `json:"terms"`
}

// ParsePriceItem reads the instance type and hourly USD price of one price
// list item. Items without an instance type, an hourly dimension or a
// positive price are not instance prices and are skipped (false).
func ParsePriceItem(item string) (string, float64, bool) {
	var pi priceItem
	if err := json.Unmarshal([]byte(item), &pi); err != nil {
		return "", 0, false
	}
	name := pi.Product.Attributes.InstanceType
	if name == "" {
		return "", 0, false
	}
	for _, term := range pi.Terms.OnDemand {
		for _, dim := range term.PriceDimensions {
			if dim.Unit != "" && dim.Unit != "Hrs" {
				continue
			}
			price, err := strconv.ParseFloat(dim.PricePerUnit["USD"], 64)
			if err != nil || price <= 0 {
				continue
			}
			return name, price, true
		}
	}
	return "", 0, false
}
