package specs

import (
	"encoding/json"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "github.com/joist-dev/joist/pkg/apis/v1"
	"github.com/joist-dev/joist/pkg/apis/v1beta1"
)

// v1beta1 objects (Karpenter v0.32–v0.37) are read by converting them to
// v1 as Karpenter v1.0's conversion webhook did, after checking what only
// v1beta1 has at its own paths; the v1 object is then defaulted and
// validated as any v1 object, and an error on a field v1 moved or renamed
// is reported where the user wrote it (v1beta1Owned).

var (
	operatorsV1Beta1              = []string{"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"}
	consolidationPoliciesV1Beta1  = []string{v1beta1.ConsolidationPolicyWhenEmpty, v1beta1.ConsolidationPolicyWhenUnderutilized}
	amiFamiliesV1Beta1            = []string{v1.AMIFamilyAL2, v1.AMIFamilyAL2023, v1.AMIFamilyBottlerocket, v1beta1.AMIFamilyUbuntu, v1.AMIFamilyCustom, v1.AMIFamilyWindows2019, v1.AMIFamilyWindows2022}
	v1beta1OwnedNodePoolFields    = []string{"spec.template.spec.expireAfter", "spec.disruption.consolidateAfter", "spec.disruption.consolidationPolicy", "spec.template.spec.nodeClassRef"}
	v1beta1OwnedEC2NodeClassField = "spec.amiFamily"
)

// loadNodePoolV1Beta1 reads a karpenter.sh/v1beta1 NodePool as the v1
// NodePool Karpenter v1.0 converted it to, and the pool's own kubelet
// settings as v1's spec.kubelet keys them (nil if none), which v1 keeps
// on the EC2NodeClass: as in
// Karpenter v1.0, a pool's v1beta1 kubelet settings replace its node
// class's.
func loadNodePoolV1Beta1(raw []byte) (*v1.NodePool, map[string]json.RawMessage, []string, errs) {
	in := &v1beta1.NodePool{}
	if l := decodeStrict(raw, in); len(l) > 0 {
		return nil, nil, nil, l
	}
	var notes []string
	var l errs
	spec := field.NewPath("spec")
	ts := &in.Spec.Template.Spec
	tsp := spec.Child("template", "spec")

	for i, r := range ts.Requirements {
		if !contains(operatorsV1Beta1, string(r.Operator)) {
			l.unsupported(tsp.Child("requirements").Index(i).Child("operator"), string(r.Operator), operatorsV1Beta1)
		}
	}

	ref := &v1.NodeClassReference{Group: v1.GroupAWS, Kind: v1.KindEC2NodeClass}
	refp := tsp.Child("nodeClassRef")
	switch r := ts.NodeClassRef; {
	case r == nil:
		l.required(refp)
	default:
		ref.Name = r.Name
		if r.Name == "" {
			l.required(refp.Child("name"))
		}
		if r.Kind != "" && r.Kind != v1.KindEC2NodeClass {
			l.unsupported(refp.Child("kind"), r.Kind, []string{v1.KindEC2NodeClass})
		}
		if r.APIVersion != "" {
			group, _, _ := strings.Cut(r.APIVersion, "/")
			if group != v1.GroupAWS {
				l.invalid(refp.Child("apiVersion"), r.APIVersion, "must be of group %s", v1.GroupAWS)
			}
		}
	}

	// v1beta1's disruption defaults: consolidate when underutilized,
	// expire after 720h.
	d := v1beta1.Disruption{}
	if in.Spec.Disruption != nil {
		d = *in.Spec.Disruption
	}
	if d.ConsolidationPolicy == "" {
		d.ConsolidationPolicy = v1beta1.ConsolidationPolicyWhenUnderutilized
	}
	if d.ExpireAfter == nil {
		d.ExpireAfter = ptrTo(v1.DefaultExpireAfter)
	}
	dp := spec.Child("disruption")
	if !contains(consolidationPoliciesV1Beta1, d.ConsolidationPolicy) {
		l.unsupported(dp.Child("consolidationPolicy"), d.ConsolidationPolicy, consolidationPoliciesV1Beta1)
	}
	validateDurationField(&l, d.ConsolidateAfter, dp.Child("consolidateAfter"), nillableDurationRe)
	validateDurationField(&l, d.ExpireAfter, dp.Child("expireAfter"), nillableDurationRe)
	switch {
	case d.ConsolidationPolicy == v1beta1.ConsolidationPolicyWhenUnderutilized && d.ConsolidateAfter != nil && *d.ConsolidateAfter != v1.Never:
		l.add(dp, "consolidateAfter cannot be combined with consolidationPolicy=WhenUnderutilized")
	case d.ConsolidationPolicy == v1beta1.ConsolidationPolicyWhenEmpty && d.ConsolidateAfter == nil:
		l.add(dp, "consolidateAfter must be specified with consolidationPolicy=WhenEmpty")
	}

	var kubelet map[string]json.RawMessage
	if ts.Kubelet != nil {
		raw, _ := json.Marshal(ts.Kubelet)
		_ = json.Unmarshal(raw, &kubelet)
		validateKubeletV1(&l, kubelet, tsp.Child("kubelet"))
	}

	out := &v1.NodePool{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1.APIVersionNodePool, Kind: v1.KindNodePool},
		ObjectMeta: in.ObjectMeta,
	}
	t := &out.Spec.Template
	t.ObjectMeta = v1.TemplateMeta(in.Spec.Template.ObjectMeta)
	t.Spec.Taints = ts.Taints
	t.Spec.StartupTaints = ts.StartupTaints
	if ts.Requirements != nil {
		t.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{}
	}
	for _, r := range ts.Requirements {
		t.Spec.Requirements = append(t.Spec.Requirements, v1.NodeSelectorRequirementWithMinValues(r))
	}
	t.Spec.NodeClassRef = ref
	t.Spec.ExpireAfter = d.ExpireAfter
	od := &out.Spec.Disruption
	switch d.ConsolidationPolicy {
	case v1beta1.ConsolidationPolicyWhenUnderutilized:
		// Karpenter v1.0 made this 0s whatever consolidateAfter said;
		// Never (consolidation off, the one value v1beta1 allowed here)
		// is kept, so that a pool whose consolidation was off stays off.
		od.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmptyOrUnderutilized
		od.ConsolidateAfter = ptrTo("0s")
		if d.ConsolidateAfter != nil && *d.ConsolidateAfter == v1.Never {
			od.ConsolidateAfter = ptrTo(v1.Never)
			notes = append(notes, fmt.Sprintf("NodePool %q: WhenUnderutilized with consolidateAfter Never (consolidation off) stays off: consolidateAfter Never (Karpenter v1.0's conversion made it 0s, turning consolidation on)", in.Name))
		}
	default:
		od.ConsolidationPolicy = d.ConsolidationPolicy
		od.ConsolidateAfter = d.ConsolidateAfter
	}
	for _, b := range d.Budgets {
		od.Budgets = append(od.Budgets, v1.Budget{Nodes: b.Nodes, Schedule: b.Schedule, Duration: b.Duration})
	}
	if d.Budgets != nil && od.Budgets == nil {
		od.Budgets = []v1.Budget{}
	}
	out.Spec.Limits = in.Spec.Limits
	out.Spec.Weight = in.Spec.Weight

	defaultNodePool(out)
	for _, fe := range validateNodePool(out) {
		if !v1beta1Owned(fe.Field, v1beta1OwnedNodePoolFields...) {
			l = append(l, fe)
		}
	}
	return out, kubelet, notes, l
}

// v1beta1Owned tells whether a v1 error's field is one the v1beta1 checks
// above own (checked, at its v1beta1 path, before conversion).
func v1beta1Owned(path string, owned ...string) bool {
	for _, o := range owned {
		if path == o || strings.HasPrefix(path, o+".") {
			return true
		}
	}
	return false
}

// loadEC2NodeClassV1Beta1 reads a karpenter.k8s.aws/v1beta1 EC2NodeClass
// as the v1 EC2NodeClass Karpenter v1.0 converted it to: a family with
// no AMI selector terms becomes the family's alias (al2@latest), a family
// with terms is kept beside them, and Ubuntu, which v1 dropped, becomes
// AL2 (the same bootstrap) with Ubuntu's root volume when no block devices
// are given. Karpenter v1.0 kept an Ubuntu class without AMI selector
// terms but never launched from it; Joist refuses it with the fix.
func loadEC2NodeClassV1Beta1(raw []byte) (*v1.EC2NodeClass, []string, errs) {
	in := &v1beta1.EC2NodeClass{}
	if l := decodeStrict(raw, in); len(l) > 0 {
		return nil, nil, l
	}
	var notes []string
	var l errs
	s := &in.Spec
	fp := field.NewPath("spec", "amiFamily")
	family := deref(s.AMIFamily)
	switch {
	case s.AMIFamily == nil:
		l.required(fp)
	case !contains(amiFamiliesV1Beta1, family):
		l.unsupported(fp, family, amiFamiliesV1Beta1)
	case family == v1beta1.AMIFamilyUbuntu && len(s.AMISelectorTerms) == 0:
		l.add(fp, "Ubuntu needs amiSelectorTerms: Karpenter v1 no longer finds Ubuntu AMIs (select them by id, name and owner, or tags)")
	case family == v1.AMIFamilyCustom && len(s.AMISelectorTerms) == 0:
		l.add(field.NewPath("spec", "amiSelectorTerms"), "amiSelectorTerms is required when amiFamily == 'Custom'")
	}

	out := &v1.EC2NodeClass{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1.APIVersionNodeClass, Kind: v1.KindEC2NodeClass},
		ObjectMeta: in.ObjectMeta,
	}
	o := &out.Spec
	for _, t := range s.SubnetSelectorTerms {
		o.SubnetSelectorTerms = append(o.SubnetSelectorTerms, v1.SubnetSelectorTerm(t))
	}
	for _, t := range s.SecurityGroupSelectorTerms {
		o.SecurityGroupSelectorTerms = append(o.SecurityGroupSelectorTerms, v1.SecurityGroupSelectorTerm(t))
	}
	for _, t := range s.AMISelectorTerms {
		o.AMISelectorTerms = append(o.AMISelectorTerms, v1.AMISelectorTerm{Tags: t.Tags, ID: t.ID, Name: t.Name, Owner: t.Owner})
	}
	switch family {
	case v1.AMIFamilyAL2, v1.AMIFamilyAL2023, v1.AMIFamilyBottlerocket, v1.AMIFamilyWindows2019, v1.AMIFamilyWindows2022:
		if len(s.AMISelectorTerms) == 0 {
			o.AMISelectorTerms = []v1.AMISelectorTerm{{Alias: strings.ToLower(family) + "@latest"}}
		} else {
			o.AMIFamily = ptrTo(family)
		}
	case v1beta1.AMIFamilyUbuntu:
		notes = append(notes, fmt.Sprintf("EC2NodeClass %q: amiFamily Ubuntu becomes AL2 (the same bootstrap) with its amiSelectorTerms, as Karpenter v1.0 converted it: v1 has no Ubuntu family", in.Name))
		o.AMIFamily = ptrTo(v1.AMIFamilyAL2)
		if s.BlockDeviceMappings == nil {
			o.BlockDeviceMappings = []*v1.BlockDeviceMapping{{
				DeviceName: ptrTo("/dev/sda1"),
				RootVolume: true,
				EBS:        &v1.BlockDevice{Encrypted: ptrTo(true), VolumeType: ptrTo("gp3"), VolumeSize: ptrTo("20Gi")},
			}}
		}
	default:
		o.AMIFamily = ptrTo(v1.AMIFamilyCustom)
	}
	if o.AMISelectorTerms == nil {
		// Custom or Ubuntu without terms: reported above; an empty list
		// keeps v1's "required" from repeating it.
		o.AMISelectorTerms = []v1.AMISelectorTerm{}
	}
	for _, b := range s.BlockDeviceMappings {
		if b == nil {
			o.BlockDeviceMappings = append(o.BlockDeviceMappings, nil)
			continue
		}
		m := &v1.BlockDeviceMapping{DeviceName: b.DeviceName, RootVolume: b.RootVolume}
		if e := b.EBS; e != nil {
			m.EBS = &v1.BlockDevice{
				DeleteOnTermination: e.DeleteOnTermination, Encrypted: e.Encrypted, IOPS: e.IOPS, KMSKeyID: e.KMSKeyID,
				SnapshotID: e.SnapshotID, Throughput: e.Throughput, VolumeSize: e.VolumeSize, VolumeType: e.VolumeType,
			}
		}
		o.BlockDeviceMappings = append(o.BlockDeviceMappings, m)
	}
	o.AssociatePublicIPAddress = s.AssociatePublicIPAddress
	o.UserData = s.UserData
	o.Role = s.Role
	o.InstanceProfile = s.InstanceProfile
	o.Tags = s.Tags
	o.InstanceStorePolicy = s.InstanceStorePolicy
	o.DetailedMonitoring = s.DetailedMonitoring
	o.Context = s.Context
	if m := s.MetadataOptions; m != nil {
		// v1beta1's default hop limit within a given metadataOptions is
		// 2 (1 when the whole block is left out, as in v1).
		mo := v1.MetadataOptions(*m)
		if mo.HTTPPutResponseHopLimit == nil {
			mo.HTTPPutResponseHopLimit = ptrTo(int64(2))
		}
		o.MetadataOptions = &mo
	}

	for _, fe := range validateEC2NodeClass(out) {
		if fe.Field == "spec.amiSelectorTerms" && len(s.AMISelectorTerms) == 0 {
			continue // an empty list for Custom or Ubuntu, reported above
		}
		if !v1beta1Owned(fe.Field, v1beta1OwnedEC2NodeClassField) {
			l = append(l, fe)
		}
	}
	defaultEC2NodeClass(out)
	return out, notes, l
}
