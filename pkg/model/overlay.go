package model

import (
	"sort"
	"strconv"
	"strings"
)

// SortOverlays orders overlays as Karpenter applies them: the highest
// weight first, then by name, descending.
func SortOverlays(o []*Overlay) {
	sort.SliceStable(o, func(a, b int) bool {
		if o[a].Weight != o[b].Weight {
			return o[a].Weight > o[b].Weight
		}
		return o[a].Name > o[b].Name
	})
}

// ChangesPrice tells whether the overlay sets or adjusts prices.
func (o *Overlay) ChangesPrice() bool { return o.Price != "" || o.PriceAdjustment != "" }

// Adjust is price as the overlay changes it: its Price, or price plus
// its adjustment (an amount or a percentage), never below zero. Values
// the spec's validation let through always parse; one that does not
// leaves the price as it was.
func (o *Overlay) Adjust(price float64) float64 {
	if o.Price != "" {
		if p, err := strconv.ParseFloat(o.Price, 64); err == nil {
			return p
		}
		return price
	}
	change := o.PriceAdjustment
	if change == "" {
		return price
	}
	pct, isPct := strings.CutSuffix(change, "%")
	v, err := strconv.ParseFloat(pct, 64)
	if err != nil {
		return price
	}
	if isPct {
		price *= 1 + v/100
	} else {
		price += v
	}
	return max(price, 0)
}
