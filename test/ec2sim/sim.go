package ec2sim

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/utils/clock"
)

// DefaultAccountID is the account the simulator pretends to be, the same one
// kumo uses, so ARNs built by Joist from STS agree with the ones EC2 returns.
const DefaultAccountID = "000000000000"

// Options configure a simulator. The zero value is usable: it simulates
// ap-northeast-2 (the seed cluster's region) with zones a, b and c, no
// instance types, instant boots, and a real clock.
type Options struct {
	// Region names the simulated region; it appears in zone names, DNS names
	// and ARNs.
	Region string
	// Zones are the availability zones, in order. Their zone IDs are derived
	// from the region (ap-northeast-2a -> apne2-az1, ...).
	Zones []string
	// AccountID owns every resource the simulator creates; "self" in
	// DescribeImages means this account.
	AccountID string
	// InstanceTypes is everything the simulator knows about instance types:
	// DescribeInstanceTypes, offerings, prices and launchability all come
	// from here. A type not listed cannot be launched.
	InstanceTypes []InstanceTypeInfo
	// BootDelay is how long a launched instance stays pending before it is
	// running. Zero means it is running by the time anyone looks.
	BootDelay time.Duration
	// ShutdownDelay is how long a terminated instance stays shutting-down
	// before it is terminated and its address returns to the subnet.
	ShutdownDelay time.Duration
	// TerminatedRetention is how long a terminated instance stays visible to
	// DescribeInstances, as AWS keeps them for about an hour. Default 1h.
	TerminatedRetention time.Duration
	// VisibilityLag hides instances younger than this from DescribeInstances,
	// CreateTags and TerminateInstances (InvalidInstanceID.NotFound), which is
	// EC2's eventual consistency right after a launch. Default 0.
	VisibilityLag time.Duration
	// RequireKnownImages makes CreateFleet reject image IDs that were never
	// seeded with AddImage, as AWS does. Off by default so tests that do not
	// care about AMIs need not seed them.
	RequireKnownImages bool
	// CallLatency is how long each named action (e.g. "CreateFleet")
	// takes before it is answered, in wall-clock time whatever Clock is:
	// an instant CreateFleet on AWS takes from hundreds of milliseconds to
	// seconds, which a benchmark of a launching pass must see
	// (test/scale). Zero: at once.
	CallLatency map[string]time.Duration
	// Clock drives every state transition and timestamp. Default: the real
	// clock. Tests step a k8s.io/utils/clock/testing FakeClock, the clock
	// Joist's own code takes.
	Clock clock.PassiveClock
}

// Sim is an in-memory EC2 for one account and region. It is an http.Handler
// speaking the EC2 Query API; every method is safe for concurrent use.
type Sim struct {
	opts  Options
	clock clock.PassiveClock
	start time.Time

	mu  sync.Mutex
	seq map[string]uint64
	// hooks run after an action took effect (AfterAction).
	hooks map[string]func()

	zones []zone

	vpcs        map[string]*vpc
	vpcOrder    []string
	defaultVPC  string
	subnets     map[string]*subnet
	subnetOrder []string
	groups      map[string]*securityGroup
	groupOrder  []string

	images     map[string]*image
	imageOrder []string

	types      map[string]InstanceTypeInfo
	typeOrder  []string
	spotPrices map[poolKey][]pricePoint

	instances     map[string]*instance
	instanceOrder []string

	templates      map[string]*launchTemplate
	templateOrder  []string
	templateByName map[string]string
	templateTokens map[string]idempotent

	fleets      map[string]*fleet
	fleetTokens map[string]idempotent

	reservations     map[string]*capacityReservation
	reservationOrder []string

	placementGroups     map[string]*placementGroup
	placementGroupOrder []string

	faults *faults
	auth   authState

	calls map[string]int
	// invocations counts first attempts only (see Invocations).
	invocations map[string]int
	fleetCalls  []CreateFleetRecord

	// sink receives the EventBridge events the simulator emits.
	sink func(Event)
}

// idempotent remembers what a client token produced, so a retry with the
// same token and the same parameters returns the same thing and a retry
// with different parameters is refused, as EC2 does.
type idempotent struct {
	paramsHash string
	resourceID string
}

// New returns a simulator with no VPCs, subnets or images; seed it with
// SeedDefault or the Add* helpers. It panics if an instance type is listed
// twice or has no name, since that is a bug in the test's setup.
func New(opts Options) *Sim {
	if opts.Region == "" {
		opts.Region = "ap-northeast-2"
	}
	if len(opts.Zones) == 0 {
		opts.Zones = []string{opts.Region + "a", opts.Region + "b", opts.Region + "c"}
	}
	if opts.AccountID == "" {
		opts.AccountID = DefaultAccountID
	}
	if opts.TerminatedRetention == 0 {
		opts.TerminatedRetention = time.Hour
	}
	c := opts.Clock
	if c == nil {
		c = clock.RealClock{}
	}
	s := &Sim{
		opts:            opts,
		clock:           c,
		start:           c.Now(),
		seq:             map[string]uint64{},
		vpcs:            map[string]*vpc{},
		subnets:         map[string]*subnet{},
		groups:          map[string]*securityGroup{},
		images:          map[string]*image{},
		types:           map[string]InstanceTypeInfo{},
		spotPrices:      map[poolKey][]pricePoint{},
		instances:       map[string]*instance{},
		templates:       map[string]*launchTemplate{},
		templateByName:  map[string]string{},
		templateTokens:  map[string]idempotent{},
		fleets:          map[string]*fleet{},
		fleetTokens:     map[string]idempotent{},
		reservations:    map[string]*capacityReservation{},
		placementGroups: map[string]*placementGroup{},
		faults:          newFaults(),
		calls:           map[string]int{},
		invocations:     map[string]int{},
	}
	code := regionCode(opts.Region)
	for i, name := range opts.Zones {
		s.zones = append(s.zones, zone{name: name, id: fmt.Sprintf("%s-az%d", code, i+1)})
	}
	for _, it := range opts.InstanceTypes {
		if it.Name == "" {
			panic("ec2sim: instance type with no name")
		}
		if _, dup := s.types[it.Name]; dup {
			panic(fmt.Sprintf("ec2sim: instance type %s listed twice", it.Name))
		}
		it.Arch = normalizeArch(it.Arch)
		s.types[it.Name] = it
		s.typeOrder = append(s.typeOrder, it.Name)
		if it.SpotSupported {
			for _, z := range s.offeredZones(it) {
				s.spotPrices[poolKey{it.Name, z}] = []pricePoint{{at: s.start, price: it.SpotPrice}}
			}
		}
	}
	sort.Strings(s.typeOrder)
	return s
}

// NewServer starts the simulator on an httptest server; point the SDK at
// srv.URL (ec2.Options.BaseEndpoint or AWS_ENDPOINT_URL_EC2). The caller
// closes srv.
func NewServer(opts Options) (*Sim, *httptest.Server) {
	s := New(opts)
	return s, httptest.NewServer(s)
}

// Start serves the simulator for the rest of the test and returns its
// endpoint URL; the server is closed by t.Cleanup.
func (s *Sim) Start(t testing.TB) string {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv.URL
}

// Region returns the simulated region.
func (s *Sim) Region() string { return s.opts.Region }

// Zones returns the simulated availability zone names, in order.
func (s *Sim) Zones() []string { return append([]string(nil), s.opts.Zones...) }

func (s *Sim) now() time.Time { return s.clock.Now().UTC() }

// newID returns the next identifier with the given prefix in EC2's shape
// (prefix, dash, 17 hex digits). Identifiers are sequential per prefix so
// test failures and demo logs are reproducible.
func (s *Sim) newID(prefix string) string {
	s.seq[prefix]++
	return fmt.Sprintf("%s-%017x", prefix, s.seq[prefix])
}

// newUUIDLike returns an identifier shaped like a UUID (fleet IDs and
// request IDs look like that on AWS), sequential for reproducibility.
func (s *Sim) newUUIDLike(kind string) string {
	s.seq[kind]++
	n := s.seq[kind]
	return fmt.Sprintf("%08x-0000-4000-8000-%012x", uint32(n>>48), n&0xffffffffffff)
}

func newRequestID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "00000000-0000-4000-8000-000000000000"
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// zone is one simulated availability zone.
type zone struct{ name, id string }

func (s *Sim) zoneByName(name string) (zone, bool) {
	for _, z := range s.zones {
		if z.name == name {
			return z, true
		}
	}
	return zone{}, false
}

// regionCode abbreviates a region the way AWS zone IDs do:
// ap-northeast-2 -> apne2, us-east-1 -> use1, eu-central-1 -> euc1.
func regionCode(region string) string {
	parts := strings.Split(region, "-")
	if len(parts) < 3 {
		return strings.ReplaceAll(region, "-", "")
	}
	dirs := map[string]string{
		"north": "n", "south": "s", "east": "e", "west": "w", "central": "c",
		"northeast": "ne", "northwest": "nw", "southeast": "se", "southwest": "sw",
	}
	var b strings.Builder
	b.WriteString(parts[0])
	for _, p := range parts[1 : len(parts)-1] {
		if d, ok := dirs[p]; ok {
			b.WriteString(d)
		} else if p != "" {
			b.WriteString(p[:1])
		}
	}
	b.WriteString(parts[len(parts)-1])
	return b.String()
}

// dnsSuffix is the private DNS domain of the region: us-east-1 is the one
// region whose private names end in ec2.internal rather than
// <region>.compute.internal.
func (s *Sim) dnsSuffix() string {
	if s.opts.Region == "us-east-1" {
		return "ec2.internal"
	}
	return s.opts.Region + ".compute.internal"
}
