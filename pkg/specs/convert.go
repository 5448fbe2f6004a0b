package specs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	v1 "github.com/joist-dev/joist/pkg/apis/v1"
	"github.com/joist-dev/joist/pkg/apis/v1alpha1"
	"github.com/joist-dev/joist/pkg/apis/v1alpha5"
	"github.com/joist-dev/joist/pkg/model"
)

// ConvertOptions fill what a v1 EC2NodeClass requires and a v1alpha1
// AWSNodeTemplate could leave to cluster-wide settings.
type ConvertOptions struct {
	// InstanceProfile is used for templates without instanceProfile
	// (Karpenter v0.20 fell back to aws.defaultInstanceProfile).
	InstanceProfile string
	// Role is used instead when InstanceProfile is empty.
	Role string
}

// Converted is the outcome of ConvertToV1: v1 objects in input order and
// the warnings for everything that has no exact v1 equivalent.
type Converted struct {
	NodePools      []*v1.NodePool
	EC2NodeClasses []*v1.EC2NodeClass
	// Order lists the objects in output order (each a *v1.NodePool, a
	// *v1.EC2NodeClass or a *v1alpha1.NodeOverlay, kept as it was).
	Order    []any
	Warnings []string
}

// YAML renders the converted objects as one multi-document YAML stream.
func (c *Converted) YAML() ([]byte, error) {
	var buf bytes.Buffer
	for i, o := range c.Order {
		b, err := yaml.Marshal(o)
		if err != nil {
			return nil, fmt.Errorf("render object %d: %w", i+1, err)
		}
		if np, ok := o.(*v1.NodePool); ok && np.Spec.Disruption.Budgets != nil && len(np.Spec.Disruption.Budgets) == 0 {
			// An explicit empty list (no budget: no limit) is not the
			// absent one (v1 defaults it to 10%), which omitempty
			// would make it.
			if b, err = withEmptyBudgets(b); err != nil {
				return nil, fmt.Errorf("render object %d: %w", i+1, err)
			}
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(b)
	}
	return buf.Bytes(), nil
}

// ConvertToV1 rewrites v1alpha5 Provisioners and v1alpha1 AWSNodeTemplates
// as v1 NodePools and EC2NodeClasses that behave the same, writing out
// every default the old APIs applied implicitly (requirements, IMDS hop
// limit 2, no disruption budget, no expiry) since v1 defaults differ.
// v1beta1 objects come out as Load reads them (v1beta1.go), their pools'
// kubelet settings moved onto node classes (placeBetaKubelets); v1
// objects pass through; other kinds are skipped with a warning.
// Invalid objects are not converted and are returned as errors.
func ConvertToV1(objs []Object, opts ConvertOptions) (*Converted, []error) {
	c := &Converted{}
	var errList []error
	var typed []*Typed
	for _, o := range objs {
		if o.Ignored {
			c.warn("%s %s: not a spec kind, skipped", o.Where(), o)
			continue
		}
		t, err := Load(o)
		if err != nil {
			errList = append(errList, err)
			continue
		}
		typed = append(typed, t)
	}

	// A v1 kubelet lives on the node class. Provisioners sharing a
	// template keep sharing one EC2NodeClass when their kubelet settings
	// agree; otherwise each gets its own copy of the class.
	kubeletsByTemplate := map[string]map[string]bool{}
	for _, t := range typed {
		if p := t.Provisioner; p != nil && p.Spec.ProviderRef != nil {
			k := kubeletKey(p.Spec.KubeletConfiguration)
			if kubeletsByTemplate[p.Spec.ProviderRef.Name] == nil {
				kubeletsByTemplate[p.Spec.ProviderRef.Name] = map[string]bool{}
			}
			kubeletsByTemplate[p.Spec.ProviderRef.Name][k] = true
		}
	}
	templates := map[string]*v1alpha1.AWSNodeTemplate{}
	usedClassNames := map[string]bool{}
	for _, t := range typed {
		switch {
		case t.AWSNodeTemplate != nil:
			templates[t.AWSNodeTemplate.Name] = t.AWSNodeTemplate
			usedClassNames[t.AWSNodeTemplate.Name] = true
		case t.EC2NodeClass != nil:
			usedClassNames[t.EC2NodeClass.Name] = true
		}
	}
	// kubeletFor gives the kubelet to put on a template's class when all
	// its provisioners agree.
	sharedKubelet := map[string]*v1alpha5.KubeletConfiguration{}
	for _, t := range typed {
		if p := t.Provisioner; p != nil && p.Spec.ProviderRef != nil && len(kubeletsByTemplate[p.Spec.ProviderRef.Name]) == 1 {
			sharedKubelet[p.Spec.ProviderRef.Name] = p.Spec.KubeletConfiguration
		}
	}

	classKubelet, ownClass := placeBetaKubelets(typed)
	for _, t := range typed {
		c.Warnings = append(c.Warnings, t.notes...)
		switch {
		case t.NodePool != nil:
			class := t.NodePool.Spec.Template.Spec.NodeClassRef.Name
			_, shared := classKubelet[class]
			switch nc := ownClass[t.NodePool.Name]; {
			case nc != nil:
				c.warn("NodePool %q: kubelet settings differ between the NodePools sharing EC2NodeClass %q; v1 keeps them on the node class, so this pool gets its own EC2NodeClass %q", t.NodePool.Name, class, nc.Name)
				t.NodePool.Spec.Template.Spec.NodeClassRef.Name = nc.Name
				c.add(nc)
			case t.kubelet != nil && !shared:
				c.warn("NodePool %q: EC2NodeClass %q is not among the converted objects; v1 keeps the pool's kubelet settings on it, so add them there", t.NodePool.Name, class)
			}
			c.add(t.NodePool)
		case t.NodeOverlay != nil:
			// The v1 NodePools' own API: kept as it is.
			c.add(t.NodeOverlay)
		case t.EC2NodeClass != nil:
			if kc, ok := classKubelet[t.EC2NodeClass.Name]; ok {
				t.EC2NodeClass.Spec.Kubelet = kc
			}
			c.add(t.EC2NodeClass)
		case t.AWSNodeTemplate != nil:
			tmpl := t.AWSNodeTemplate
			nc := c.convertAWS(tmpl.Name, &tmpl.Spec.AWS, opts)
			c.convertTemplateExtras(tmpl, nc)
			c.setKubelet(nc, sharedKubelet[tmpl.Name])
			copyObjectMeta(&nc.ObjectMeta, &tmpl.ObjectMeta)
			c.add(nc)
		case t.Provisioner != nil:
			p := t.Provisioner
			np := c.convertProvisioner(p)
			switch {
			case t.inline != nil:
				name := p.Name
				if usedClassNames[name] {
					name = p.Name + "-provider"
					c.warn("Provisioner %q: its inline provider becomes EC2NodeClass %q (%q is taken)", p.Name, name, p.Name)
				}
				usedClassNames[name] = true
				nc := c.convertAWS(name, t.inline, opts)
				c.setKubelet(nc, p.Spec.KubeletConfiguration)
				np.Spec.Template.Spec.NodeClassRef.Name = name
				c.add(nc)
			case len(kubeletsByTemplate[p.Spec.ProviderRef.Name]) > 1:
				tmpl := templates[p.Spec.ProviderRef.Name]
				name := p.Spec.ProviderRef.Name + "-" + p.Name
				if tmpl == nil {
					c.warn("Provisioner %q: AWSNodeTemplate %q is not among the converted objects; its kubelet settings need an EC2NodeClass of their own", p.Name, p.Spec.ProviderRef.Name)
					break
				}
				c.warn("Provisioner %q: kubelet settings differ between the Provisioners sharing AWSNodeTemplate %q; v1 keeps them on the node class, so this pool gets its own EC2NodeClass %q", p.Name, tmpl.Name, name)
				nc := c.convertAWS(name, &tmpl.Spec.AWS, opts)
				c.convertTemplateExtras(tmpl, nc)
				c.setKubelet(nc, p.Spec.KubeletConfiguration)
				np.Spec.Template.Spec.NodeClassRef.Name = name
				c.add(nc)
			}
			c.add(np)
		}
	}
	return c, errList
}

// placeBetaKubelets puts v1beta1 NodePools' kubelet settings where v1
// keeps them, on the node class: a class every one of whose pools is a
// v1beta1 pool with the same settings gets them (classKubelet, by class
// name); otherwise each v1beta1 pool with settings of its own gets a copy
// of its class named <class>-<pool> carrying them (ownClass, by pool
// name), and the class keeps its own for the other pools. A class not
// among the objects is left alone (Build reports the missing class).
func placeBetaKubelets(typed []*Typed) (classKubelet map[string]map[string]json.RawMessage, ownClass map[string]*v1.EC2NodeClass) {
	classes := map[string]*v1.EC2NodeClass{}
	taken := map[string]bool{}
	for _, t := range typed {
		if nc := t.EC2NodeClass; nc != nil {
			classes[nc.Name] = nc
			taken[nc.Name] = true
		}
	}
	// settings[class] is each of its pools' kubelet: its own, or the
	// class's for a pool without (a v1 pool or a v1beta1 one with none).
	settings := map[string]map[string]bool{}
	beta := map[string]bool{}
	for _, t := range typed {
		np := t.NodePool
		if np == nil || classes[np.Spec.Template.Spec.NodeClassRef.Name] == nil {
			continue
		}
		name := np.Spec.Template.Spec.NodeClassRef.Name
		if settings[name] == nil {
			settings[name] = map[string]bool{}
		}
		kc := t.kubelet
		if kc == nil {
			kc = classes[name].Spec.Kubelet
		} else {
			beta[name] = true
		}
		b, _ := json.Marshal(kc)
		settings[name][string(b)] = true
	}
	classKubelet = map[string]map[string]json.RawMessage{}
	ownClass = map[string]*v1.EC2NodeClass{}
	for _, t := range typed {
		np := t.NodePool
		if np == nil || t.kubelet == nil || classes[np.Spec.Template.Spec.NodeClassRef.Name] == nil {
			continue
		}
		name := np.Spec.Template.Spec.NodeClassRef.Name
		if len(settings[name]) == 1 && beta[name] {
			classKubelet[name] = t.kubelet
			continue
		}
		own := name + "-" + np.Name
		for n := 2; taken[own]; n++ {
			own = fmt.Sprintf("%s-%s-%d", name, np.Name, n)
		}
		taken[own] = true
		b, _ := json.Marshal(classes[name])
		nc := &v1.EC2NodeClass{}
		_ = json.Unmarshal(b, nc)
		nc.Name, nc.Spec.Kubelet = own, t.kubelet
		ownClass[np.Name] = nc
	}
	return classKubelet, ownClass
}

// withEmptyBudgets writes spec.disruption.budgets: [] into a rendered
// NodePool.
func withEmptyBudgets(b []byte) ([]byte, error) {
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	spec, _ := m["spec"].(map[string]any)
	if spec == nil {
		return b, nil
	}
	d, _ := spec["disruption"].(map[string]any)
	if d == nil {
		d = map[string]any{}
		spec["disruption"] = d
	}
	d["budgets"] = []any{}
	return yaml.Marshal(m)
}

func (c *Converted) warn(format string, args ...any) {
	c.Warnings = append(c.Warnings, fmt.Sprintf(format, args...))
}

func (c *Converted) add(o any) {
	switch t := o.(type) {
	case *v1.NodePool:
		c.NodePools = append(c.NodePools, t)
	case *v1.EC2NodeClass:
		c.EC2NodeClasses = append(c.EC2NodeClasses, t)
	}
	c.Order = append(c.Order, o)
}

func copyObjectMeta(dst, src *metav1.ObjectMeta) {
	dst.Labels = copyMap(src.Labels)
	dst.Annotations = copyMap(src.Annotations)
}

func kubeletKey(kc *v1alpha5.KubeletConfiguration) string {
	if kc == nil {
		return ""
	}
	b, _ := json.Marshal(kc)
	return string(b)
}

// convertProvisioner writes a Provisioner as a NodePool with every
// v1alpha5 behaviour spelled out.
func (c *Converted) convertProvisioner(p *v1alpha5.Provisioner) *v1.NodePool {
	s := &p.Spec
	np := &v1.NodePool{
		TypeMeta: metav1.TypeMeta{APIVersion: v1.APIVersionNodePool, Kind: v1.KindNodePool},
	}
	np.Name = p.Name
	copyObjectMeta(&np.ObjectMeta, &p.ObjectMeta)
	t := &np.Spec.Template
	for _, k := range sortedKeys(s.Labels) {
		if why := restrictedV1(k); why != "" {
			c.warn("Provisioner %q: label %q dropped, v1 refuses it (%s)", p.Name, k, why)
			continue
		}
		if t.ObjectMeta.Labels == nil {
			t.ObjectMeta.Labels = map[string]string{}
		}
		t.ObjectMeta.Labels[k] = s.Labels[k]
	}
	t.ObjectMeta.Annotations = copyMap(s.Annotations)
	t.Spec.Taints = s.Taints
	t.Spec.StartupTaints = s.StartupTaints
	t.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{}
	for _, r := range s.Requirements {
		key := model.NormalizeLabelKey(r.Key)
		if why := restrictedV1(key); why != "" {
			c.warn("Provisioner %q: requirement on %q dropped, v1 refuses it (%s)", p.Name, key, why)
			continue
		}
		t.Spec.Requirements = append(t.Spec.Requirements, v1.NodeSelectorRequirementWithMinValues{Key: key, Operator: r.Operator, Values: r.Values})
	}
	ref := &v1.NodeClassReference{Group: v1.GroupAWS, Kind: v1.KindEC2NodeClass, Name: p.Name}
	if s.ProviderRef != nil {
		ref.Name = s.ProviderRef.Name
	}
	t.Spec.NodeClassRef = ref
	t.Spec.ExpireAfter = ptrTo(v1.Never)
	if s.TTLSecondsUntilExpired != nil {
		t.Spec.ExpireAfter = ptrTo(formatDuration(time.Duration(*s.TTLSecondsUntilExpired) * time.Second))
	}
	d := &np.Spec.Disruption
	switch {
	case s.Consolidation != nil && deref(s.Consolidation.Enabled):
		d.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmptyOrUnderutilized
		d.ConsolidateAfter = ptrTo("0s")
	case s.TTLSecondsAfterEmpty != nil:
		d.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmpty
		d.ConsolidateAfter = ptrTo(formatDuration(time.Duration(*s.TTLSecondsAfterEmpty) * time.Second))
	default:
		d.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmpty
		d.ConsolidateAfter = ptrTo(v1.Never)
	}
	// v1alpha5 had no budgets; 100% keeps "no limit" (v1 defaults to 10%).
	d.Budgets = []v1.Budget{{Nodes: "100%"}}
	if s.Limits != nil && len(s.Limits.Resources) > 0 {
		np.Spec.Limits = s.Limits.Resources.DeepCopy()
	}
	np.Spec.Weight = s.Weight
	if kc := s.KubeletConfiguration; kc != nil && kc.ContainerRuntime != nil {
		c.warn("Provisioner %q: kubeletConfiguration.containerRuntime %q dropped, v1 always uses containerd", p.Name, *kc.ContainerRuntime)
	}
	return np
}

// setKubelet writes v1alpha5 kubelet settings as the open v1 map: the
// model's reading of them (kubeletV1Alpha5ToModel), keyed as spec.kubelet
// keys them, so the field list is the model's alone.
func (c *Converted) setKubelet(nc *v1.EC2NodeClass, kc *v1alpha5.KubeletConfiguration) {
	k := kubeletV1Alpha5ToModel(kc)
	if k == nil {
		return
	}
	raw, _ := json.Marshal(k)
	var all map[string]json.RawMessage
	_ = json.Unmarshal(raw, &all)
	for key := range all {
		if !kubeletKnownKeys[key] {
			delete(all, key)
		}
	}
	if len(all) == 0 {
		return
	}
	nc.Spec.Kubelet = all
}

// convertAWS writes v1alpha1 AWS settings as an EC2NodeClass.
func (c *Converted) convertAWS(name string, a *v1alpha1.AWS, opts ConvertOptions) *v1.EC2NodeClass {
	nc := &v1.EC2NodeClass{TypeMeta: metav1.TypeMeta{APIVersion: v1.APIVersionNodeClass, Kind: v1.KindEC2NodeClass}}
	nc.Name = name
	s := &nc.Spec
	what := fmt.Sprintf("AWSNodeTemplate %q", name)

	if a.LaunchTemplateName != nil {
		c.warn("%s: launchTemplate %q has no v1 equivalent; set securityGroupSelectorTerms, amiSelectorTerms, userData and role or instanceProfile from it", what, *a.LaunchTemplateName)
	}
	ids, tags := splitSelector(a.SubnetSelector)
	if len(ids) > 0 && len(tags) > 0 {
		c.warn("%s: subnetSelector combines aws-ids with tags; v1 selects by id alone, the tags were dropped", what)
	}
	for _, id := range ids {
		s.SubnetSelectorTerms = append(s.SubnetSelectorTerms, v1.SubnetSelectorTerm{ID: id})
	}
	if len(ids) == 0 && len(tags) > 0 {
		s.SubnetSelectorTerms = append(s.SubnetSelectorTerms, v1.SubnetSelectorTerm{Tags: tags})
	}
	ids, tags = splitSelector(a.SecurityGroupSelector)
	if len(ids) > 0 && len(tags) > 0 {
		c.warn("%s: securityGroupSelector combines aws-ids with tags; v1 selects by id alone, the tags were dropped", what)
	}
	for _, id := range ids {
		s.SecurityGroupSelectorTerms = append(s.SecurityGroupSelectorTerms, v1.SecurityGroupSelectorTerm{ID: id})
	}
	if len(ids) == 0 && len(tags) > 0 {
		s.SecurityGroupSelectorTerms = append(s.SecurityGroupSelectorTerms, v1.SecurityGroupSelectorTerm{Tags: tags})
	}

	family := deref(a.AMIFamily)
	switch family {
	case v1alpha1.AMIFamilyAL2:
		c.warn("%s: AL2 maps to alias al2@latest, which EKS 1.33 and later refuse; plan a move to al2023@latest", what)
	case v1alpha1.AMIFamilyUbuntu:
		c.warn("%s: v1 has no Ubuntu family; converted to amiFamily Custom selecting Canonical's EKS images by name; check the name pattern and user data", what)
	}
	switch {
	case a.InstanceProfile != nil:
		s.InstanceProfile = a.InstanceProfile
	case opts.InstanceProfile != "":
		s.InstanceProfile = ptrTo(opts.InstanceProfile)
	case opts.Role != "":
		s.Role = opts.Role
	default:
		s.InstanceProfile = ptrTo("REPLACE-WITH-INSTANCE-PROFILE")
		c.warn("%s: v1 needs role or instanceProfile; pass --instance-profile (the cluster's default instance profile) or --role", what)
	}
	for _, k := range sortedKeys(a.Tags) {
		if isReservedTagV1(k) {
			c.warn("%s: tag %q dropped, v1 reserves it", what, k)
			continue
		}
		if s.Tags == nil {
			s.Tags = map[string]string{}
		}
		s.Tags[k] = a.Tags[k]
	}
	if m := a.MetadataOptions; m != nil {
		// Written out in full: v1 defaults the hop limit to 1, v1alpha1 to 2.
		s.MetadataOptions = &v1.MetadataOptions{HTTPEndpoint: m.HTTPEndpoint, HTTPProtocolIPv6: m.HTTPProtocolIPv6, HTTPPutResponseHopLimit: m.HTTPPutResponseHopLimit, HTTPTokens: m.HTTPTokens}
	}
	s.Context = a.Context
	if !isDefaultBlockDevices(a.BlockDeviceMappings, family) {
		for _, b := range a.BlockDeviceMappings {
			s.BlockDeviceMappings = append(s.BlockDeviceMappings, c.convertBlockDevice(what, b))
		}
	} else if family == v1alpha1.AMIFamilyBottlerocket {
		c.warn("%s: Bottlerocket's default OS volume grows from 4Gi (v0.20) to 6Gi (v1)", what)
	}
	c.setAMI(nc, family, nil)
	return nc
}

// convertTemplateExtras adds the fields only an AWSNodeTemplate has.
func (c *Converted) convertTemplateExtras(t *v1alpha1.AWSNodeTemplate, nc *v1.EC2NodeClass) {
	nc.Spec.UserData = t.Spec.UserData
	nc.Spec.DetailedMonitoring = t.Spec.DetailedMonitoring
	if len(t.Spec.AMISelector) > 0 {
		c.setAMI(nc, deref(t.Spec.AWS.AMIFamily), t.Spec.AMISelector)
	}
}

// setAMI writes amiFamily and amiSelectorTerms: an alias for a family
// without an AMI selector (v0.20 then took the family's recommended AMI,
// that is, the latest), or the selector's terms.
func (c *Converted) setAMI(nc *v1.EC2NodeClass, family string, sel map[string]string) {
	s := &nc.Spec
	s.AMIFamily, s.AMISelectorTerms = nil, nil
	if len(sel) == 0 {
		if alias := aliasForFamily(family); alias != "" {
			s.AMISelectorTerms = []v1.AMISelectorTerm{{Alias: alias}}
			return
		}
		if family == v1alpha1.AMIFamilyUbuntu {
			s.AMIFamily = ptrTo(v1.AMIFamilyCustom)
			s.AMISelectorTerms = []v1.AMISelectorTerm{{Name: "ubuntu-eks/k8s_*", Owner: "099720109477"}}
		}
		return
	}
	if family == v1alpha1.AMIFamilyUbuntu {
		family = v1.AMIFamilyCustom
	}
	s.AMIFamily = ptrTo(family)
	for _, t := range selectorMapToTerms(sel, amiSpecialKeys) {
		term := v1.AMISelectorTerm{ID: t.ID, Name: t.Name, Owner: t.Owner, Tags: t.Tags}
		if term.ID != "" && (term.Name != "" || term.Owner != "" || term.Tags != nil) {
			c.warn("EC2NodeClass %q: amiSelector combines aws-ids with other keys; v1 selects by id alone, the others were dropped", nc.Name)
			term = v1.AMISelectorTerm{ID: t.ID}
		}
		s.AMISelectorTerms = append(s.AMISelectorTerms, term)
	}
}

func aliasForFamily(family string) string {
	switch family {
	case v1alpha1.AMIFamilyAL2, v1alpha1.AMIFamilyBottlerocket, v1alpha1.AMIFamilyWindows2019, v1alpha1.AMIFamilyWindows2022:
		return strings.ToLower(family) + "@latest"
	}
	return ""
}

func isReservedTagV1(k string) bool {
	return strings.HasPrefix(k, "kubernetes.io/cluster") || contains(reservedTagNames, k)
}

// isDefaultBlockDevices tells whether mappings are exactly v0.20's
// defaults for the family (so v1's own defaults can stand in for them).
func isDefaultBlockDevices(bdms []*v1alpha1.BlockDeviceMapping, family string) bool {
	a, _ := json.Marshal(bdms)
	b, _ := json.Marshal(defaultBlockDevicesV1Alpha1(family))
	return bytes.Equal(a, b)
}

func (c *Converted) convertBlockDevice(what string, b *v1alpha1.BlockDeviceMapping) *v1.BlockDeviceMapping {
	out := &v1.BlockDeviceMapping{DeviceName: b.DeviceName}
	if b.VirtualName != nil {
		c.warn("%s: block device %s: virtualName (instance store) has no v1 equivalent; use instanceStorePolicy RAID0", what, deref(b.DeviceName))
	}
	if e := b.EBS; e != nil {
		out.EBS = &v1.BlockDevice{
			DeleteOnTermination: e.DeleteOnTermination,
			Encrypted:           e.Encrypted,
			IOPS:                e.IOPS,
			KMSKeyID:            e.KMSKeyID,
			SnapshotID:          e.SnapshotID,
			Throughput:          e.Throughput,
			VolumeType:          e.VolumeType,
		}
		if e.VolumeSize != nil {
			size := e.VolumeSize.String()
			if !volumeSizeV1Re.MatchString(size) {
				gi := int64(math.Ceil(float64(e.VolumeSize.Value()) / float64(1<<30)))
				size = fmt.Sprintf("%dGi", gi)
				c.warn("%s: block device %s: volumeSize %s written as %s (v1 takes Gi, G, Ti or T)", what, deref(b.DeviceName), e.VolumeSize.String(), size)
			}
			out.EBS.VolumeSize = &size
		}
	}
	return out
}

// splitSelector separates the aws-ids of a v1alpha1 selector from its tags.
func splitSelector(m map[string]string) (ids []string, tags map[string]string) {
	for _, k := range sortedKeys(m) {
		if isIDKey(k) {
			ids = append(ids, splitCommaList(m[k])...)
			continue
		}
		if tags == nil {
			tags = map[string]string{}
		}
		tags[k] = m[k]
	}
	return ids, tags
}
