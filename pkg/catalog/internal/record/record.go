// Package record is the on-disk shape of the catalog file that the
// generator writes and the catalog package embeds. It lives apart from the
// public InstanceType so the generator never has to import the package
// whose build needs the file the generator makes.
package record

// File is the whole embedded catalog.
type File struct {
	// Generated is the date the source data file was built.
	Generated string `json:"generated"`
	// OnDemandPriceAsOf maps a region (or "other regions") to the date of
	// its on-demand prices.
	OnDemandPriceAsOf map[string]string `json:"onDemandPriceAsOf"`
	// SpotPriceAsOf is the date of the spot price snapshot.
	SpotPriceAsOf string `json:"spotPriceAsOf"`
	// StaleRegionalPrices names types whose prices outside us-east-1 and
	// GovCloud are known to be older than a price change.
	StaleRegionalPrices []string `json:"staleRegionalPrices,omitempty"`
	// Refreshed maps a region to the date its prices (and the types added
	// for it) were taken from live AWS APIs by `gen -refresh-regions`;
	// absent for a file made offline from the shared data.
	Refreshed map[string]string `json:"refreshed,omitempty"`
	// Types is sorted by name.
	Types []Type `json:"types"`
}

// Type is one instance type. Zero means unknown or absent for the numeric
// fields where zero is not a real value (bandwidths, ENI counts, pods).
type Type struct {
	Name                    string             `json:"n"`
	Family                  string             `json:"f"`
	Category                string             `json:"c,omitempty"`
	Generation              int                `json:"g,omitempty"`
	Size                    string             `json:"s"`
	Arch                    string             `json:"a"`
	VCPU                    int64              `json:"v"`
	MemoryMiB               int64              `json:"m"`
	CPUManufacturer         string             `json:"cm,omitempty"`
	GPUCount                int64              `json:"gc,omitempty"`
	GPUName                 string             `json:"gn,omitempty"`
	GPUManufacturer         string             `json:"gm,omitempty"`
	GPUMemoryMiB            int64              `json:"gmm,omitempty"`
	AcceleratorName         string             `json:"an,omitempty"`
	AcceleratorManufacturer string             `json:"am,omitempty"`
	AcceleratorCount        int64              `json:"ac,omitempty"`
	NeuronCoreCount         int64              `json:"nc,omitempty"`
	HabanaGaudiCount        int64              `json:"hg,omitempty"`
	LocalNVMeGB             int64              `json:"nvme,omitempty"`
	NetworkBandwidthMbps    int64              `json:"nb,omitempty"`
	EBSBandwidthMbps        int64              `json:"eb,omitempty"`
	MaxENIs                 int64              `json:"eni,omitempty"`
	MaxENIsDefaultCard      int64              `json:"enid,omitempty"`
	IPv4PerENI              int64              `json:"ip,omitempty"`
	BranchENIs              int64              `json:"br,omitempty"`
	PublishedMaxPods        int64              `json:"mp,omitempty"`
	EKSCappedMaxPods        int64              `json:"mpc,omitempty"`
	EFACount                int64              `json:"efa,omitempty"`
	Hypervisor              *string            `json:"h,omitempty"`
	BareMetal               bool               `json:"bm,omitempty"`
	Burstable               bool               `json:"bu,omitempty"`
	SpotSupported           bool               `json:"ss,omitempty"`
	CurrentGeneration       bool               `json:"cg,omitempty"`
	OnDemandPrice           map[string]float64 `json:"od,omitempty"`
	SpotPrice               map[string]float64 `json:"sp,omitempty"`
}
