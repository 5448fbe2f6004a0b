package scheduling

// SetGrowIndex turns the growth index (growidx.go) on or off, for the
// test that plans are the same either way.
func SetGrowIndex(on bool) { growIndexOff = !on }
