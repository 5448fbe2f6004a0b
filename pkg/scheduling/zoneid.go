package scheduling

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Zone IDs. AWS names a zone differently in each account (us-east-1a here
// is use1-az4, elsewhere use1-az6); its zone ID (topology.k8s.aws/zone-id)
// is the same everywhere, so workloads that must meet another account's
// resources select or spread by it. The AWS cloud controller manager sets
// it on every node, and Karpenter's AWS provider offers it on every
// instance type as a requirement of its zones (from its node class's
// subnets). Zones and their IDs are one to one, so with Input.ZoneIDs the
// simulator reads a requirement on the zone ID as one on the zone, and a
// topology key of the zone ID as the zone's: the packer, which places
// nodes in zones, then serves them as it serves zones. Without the map
// the zone ID stays a label of its own, which no pool defines.

// LabelZoneID is AWS's zone ID label.
const LabelZoneID = "topology.k8s.aws/zone-id"

// nodeTerms is nodeTerms with zone IDs read as zones.
func (s *solver) nodeTerms(spec *corev1.PodSpec) []*reqs {
	terms := nodeTerms(spec)
	for _, r := range terms {
		s.zoneIDsAsZones(r)
	}
	return terms
}

// zoneIDsAsZones rewrites r's requirement on the zone ID, if any, into
// one on the zone, when Input.ZoneIDs is known: the zones whose ID it
// allows; and, when it allows the label to be absent (NotIn,
// DoesNotExist), the zones of no known ID too.
func (s *solver) zoneIDsAsZones(r *reqs) {
	if len(s.in.ZoneIDs) == 0 {
		return
	}
	set, ok := r.sets[LabelZoneID]
	if !ok {
		return
	}
	r.remove(LabelZoneID)
	zones := make([]string, 0, len(s.in.ZoneIDs))
	for z := range s.in.ZoneIDs {
		zones = append(zones, z)
	}
	sort.Strings(zones)
	var in, out []string
	for _, z := range zones {
		if set.has(s.in.ZoneIDs[z]) {
			in = append(in, z)
		} else {
			out = append(out, z)
		}
	}
	z := valueSet{values: in}
	if set.allowAbsent {
		z = valueSet{allowAbsent: true, complement: true, values: out}
	}
	r.add(corev1.LabelTopologyZone, z)
}

// topologyKeyOf is the key a topology term's key is counted under: the
// zone's for the zone ID, when Input.ZoneIDs maps them one to one.
func (s *solver) topologyKeyOf(key string) string {
	if key == LabelZoneID && oneToOne(s.in.ZoneIDs) {
		return corev1.LabelTopologyZone
	}
	return key
}

// oneToOne tells whether no two zones of m share an ID (and m is not
// empty): only then are domains by zone and by zone ID the same.
func oneToOne(m map[string]string) bool {
	if len(m) == 0 {
		return false
	}
	ids := sets.New[string]()
	for _, id := range m {
		if id == "" || ids.Has(id) {
			return false
		}
		ids.Insert(id)
	}
	return true
}

// remove drops key's requirement.
func (r *reqs) remove(key string) {
	if _, ok := r.sets[key]; !ok {
		return
	}
	delete(r.sets, key)
	i := sort.SearchStrings(r.keys, key)
	r.keys = append(r.keys[:i], r.keys[i+1:]...)
}
