package specs

import (
	"encoding/json"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "github.com/joist-dev/joist/pkg/apis/v1"
	"github.com/joist-dev/joist/pkg/apis/v1alpha1"
	"github.com/joist-dev/joist/pkg/apis/v1alpha5"
	"github.com/joist-dev/joist/pkg/apis/v1beta1"
	"github.com/joist-dev/joist/pkg/model"
)

// Typed is one object after decoding and defaulting: exactly one of the
// four pointers is set. Convert and the CLI use it; most callers only
// need Build.
type Typed struct {
	Object          Object
	Provisioner     *v1alpha5.Provisioner
	AWSNodeTemplate *v1alpha1.AWSNodeTemplate
	NodePool        *v1.NodePool
	EC2NodeClass    *v1.EC2NodeClass
	NodeOverlay     *v1alpha1.NodeOverlay
	// inline is a Provisioner's decoded, defaulted spec.provider.
	inline *v1alpha1.AWS
	// kubelet is a v1beta1 NodePool's own kubelet settings, keyed as a
	// v1 node class's spec.kubelet (v1 keeps them there); they replace
	// its node class's.
	kubelet map[string]json.RawMessage
	// notes say what of a v1beta1 object v1 says otherwise (joist
	// convert prints them as warnings).
	notes []string
}

// Load strict-decodes, defaults and validates one spec object. It returns
// the typed, defaulted object, or an *ObjectError listing every problem.
func Load(obj Object) (*Typed, error) {
	var l errs
	if obj.problem != nil {
		l.add(nil, "%v", obj.problem)
	}
	t := &Typed{Object: obj}
	switch obj.Kind {
	case KindProvisioner:
		p := &v1alpha5.Provisioner{}
		if de := decodeStrict(obj.Raw, p); len(de) > 0 {
			l = append(l, de...)
			break
		}
		defaultProvisioner(p)
		ve, inline := validateProvisioner(p)
		l = append(l, ve...)
		t.Provisioner, t.inline = p, inline
	case KindAWSNodeTemplate:
		a := &v1alpha1.AWSNodeTemplate{}
		if de := decodeStrict(obj.Raw, a); len(de) > 0 {
			l = append(l, de...)
			break
		}
		defaultAWS(&a.Spec.AWS)
		l = append(l, validateAWSNodeTemplate(a)...)
		t.AWSNodeTemplate = a
	case KindNodePool:
		if obj.APIVersion == v1beta1.APIVersionNodePool {
			np, kubelet, notes, ve := loadNodePoolV1Beta1(obj.Raw)
			l = append(l, ve...)
			t.NodePool, t.kubelet, t.notes = np, kubelet, notes
			break
		}
		np := &v1.NodePool{}
		if de := decodeStrict(obj.Raw, np); len(de) > 0 {
			l = append(l, de...)
			break
		}
		defaultNodePool(np)
		l = append(l, validateNodePool(np)...)
		t.NodePool = np
	case KindEC2NodeClass:
		if obj.APIVersion == v1beta1.APIVersionNodeClass {
			nc, notes, ve := loadEC2NodeClassV1Beta1(obj.Raw)
			l = append(l, ve...)
			t.EC2NodeClass, t.notes = nc, notes
			break
		}
		nc := &v1.EC2NodeClass{}
		if de := decodeStrict(obj.Raw, nc); len(de) > 0 {
			l = append(l, de...)
			break
		}
		// Validate before defaulting block devices: the defaults depend
		// on a family that must first be known to be valid. The schema
		// defaults (metadata options) are applied first, as on the API
		// server.
		l = append(l, validateEC2NodeClass(nc)...)
		defaultEC2NodeClass(nc)
		t.EC2NodeClass = nc
	case KindNodeOverlay:
		o := &v1alpha1.NodeOverlay{}
		if de := decodeStrict(obj.Raw, o); len(de) > 0 {
			l = append(l, de...)
			break
		}
		l = append(l, validateNodeOverlay(o)...)
		t.NodeOverlay = o
	default:
		return nil, fmt.Errorf("%s: %s is not a spec kind", obj.Where(), obj)
	}
	if len(l) > 0 {
		return nil, &ObjectError{Kind: obj.Kind, Name: obj.Name, Source: obj.Source, Index: obj.Index, Errors: l}
	}
	return t, nil
}

// entry is a loaded object waiting to be resolved.
type entry struct {
	obj     Object
	pool    *model.Pool
	class   *model.NodeClass
	overlay *model.Overlay
	// classOf names the generation a pool's node class must be of.
	classAPI string
	refPath  *field.Path
}

// Build defaults, validates and maps every spec object in objs (ignored
// objects are skipped) and resolves each pool's node class. A bad object
// is reported (the error names the object and field path) and left out;
// the others are still served. A pool whose node class is missing or
// invalid is reported and left out too, as is every object that shares
// its pool or node class name with another. Errors are *ObjectError,
// in input order.
func Build(objs []Object) (*model.Spec, []error) {
	spec, _, errs := BuildWith(objs, BuildOptions{})
	return spec, errs
}

// BuildOptions relax Build for offline uses.
type BuildOptions struct {
	// MissingNodeClassWarns keeps a pool whose node class is not among
	// the objects at all (`joist plan` on workload files without their
	// node classes): the pool is served with no node class, so its nodes
	// get the AMI family's defaults, and the missing reference is reported
	// as a warning instead of an error. An invalid or wrong-kind node
	// class is still an error.
	MissingNodeClassWarns bool
}

// BuildWith is Build with options; warnings are *ObjectError too.
func BuildWith(objs []Object, opts BuildOptions) (*model.Spec, []error, []error) {
	var warnings []error
	spec := &model.Spec{Pools: []*model.Pool{}, NodeClasses: map[string]*model.NodeClass{}}
	var (
		errList      []error
		objErrs      = map[int]*ObjectError{} // by position in objs
		entries      = map[int]*entry{}
		poolNames    = map[string][]int{}
		classNames   = map[string][]int{}
		overlayNames = map[string][]int{}
		badClasses   = map[string]string{} // name -> kind of an invalid class
	)
	fail := func(i int, p *field.Path, format string, args ...any) {
		oe := objErrs[i]
		if oe == nil {
			o := objs[i]
			oe = &ObjectError{Kind: o.Kind, Name: o.Name, Source: o.Source, Index: o.Index}
			objErrs[i] = oe
		}
		var l errs
		l.add(p, format, args...)
		oe.Errors = append(oe.Errors, l...)
	}

	spec.Declared = map[string]bool{}
	for i, o := range objs {
		if o.Ignored {
			continue
		}
		switch o.Kind {
		case KindProvisioner, KindNodePool:
			poolNames[o.Name] = append(poolNames[o.Name], i)
			spec.Declared[o.Name] = true
		case KindAWSNodeTemplate, KindEC2NodeClass:
			classNames[o.Name] = append(classNames[o.Name], i)
		case KindNodeOverlay:
			overlayNames[o.Name] = append(overlayNames[o.Name], i)
		}
		t, err := Load(o)
		if err != nil {
			if oe, ok := err.(*ObjectError); ok {
				objErrs[i] = oe
			} else {
				errList = append(errList, err)
			}
			if o.Kind == KindAWSNodeTemplate || o.Kind == KindEC2NodeClass {
				badClasses[o.Name] = o.Kind
			}
			continue
		}
		e := &entry{obj: o}
		switch {
		case t.Provisioner != nil:
			e.pool = provisionerToPool(t.Provisioner)
			e.classAPI = model.APIV1Alpha5
			e.refPath = field.NewPath("spec", "providerRef", "name")
			if t.inline != nil {
				// The inline provider becomes a node class of its own,
				// known only to this pool.
				e.class = awsToNodeClass(InlineNodeClassName(o.Name), t.inline)
			}
		case t.NodePool != nil:
			e.pool = nodePoolToPool(t.NodePool)
			e.pool.Kubelet = kubeletV1ToModel(t.kubelet)
			e.classAPI = model.APIV1
			e.refPath = field.NewPath("spec", "template", "spec", "nodeClassRef", "name")
		case t.AWSNodeTemplate != nil:
			e.class = templateToNodeClass(t.AWSNodeTemplate)
		case t.EC2NodeClass != nil:
			e.class = ec2NodeClassToNodeClass(t.EC2NodeClass)
		case t.NodeOverlay != nil:
			e.overlay = nodeOverlayToOverlay(t.NodeOverlay)
		}
		entries[i] = e
	}

	// Names must be unique: a pool's name becomes a node label and an EC2
	// tag, a node class's name a launch template name, and an overlay is
	// one cluster-scoped object per name.
	unique := func(names map[string][]int, what, across string, dropped func(i int)) {
		for name, idx := range names {
			if len(idx) < 2 {
				continue
			}
			for _, i := range idx {
				fail(i, field.NewPath("metadata", "name"), "%s name %q is defined %d times (%s); %s names must be unique%s", what, name, len(idx), describe(objs, idx), what, across)
				delete(entries, i)
				if dropped != nil {
					dropped(i)
				}
			}
		}
	}
	unique(poolNames, "pool", " across Provisioners and NodePools", nil)
	unique(classNames, "node class", " across AWSNodeTemplates and EC2NodeClasses", func(i int) { badClasses[objs[i].Name] = objs[i].Kind })
	unique(overlayNames, "NodeOverlay", "", nil)

	for i := range objs {
		e := entries[i]
		if e == nil || e.pool != nil {
			continue
		}
		if e.overlay != nil {
			spec.Overlays = append(spec.Overlays, e.overlay)
			continue
		}
		spec.NodeClasses[e.class.Name] = e.class
	}
	model.SortOverlays(spec.Overlays)
	for i := range objs {
		e := entries[i]
		if e == nil || e.pool == nil {
			continue
		}
		if e.class != nil { // inline provider
			spec.NodeClasses[e.class.Name] = e.class
			spec.Pools = append(spec.Pools, e.pool)
			continue
		}
		want := KindAWSNodeTemplate
		if e.classAPI == model.APIV1 {
			want = KindEC2NodeClass
		}
		nc, ok := spec.NodeClasses[e.pool.NodeClass]
		switch {
		case ok && nc.API == e.classAPI:
			if e.classAPI == model.APIV1 && nc.Kubelet != nil && e.pool.Kubelet == nil {
				// v1 keeps the kubelet on the node class; the pool
				// carries a copy because the simulator sizes nodes per
				// pool. A v1beta1 pool's own settings win (as in
				// Karpenter v1.0).
				k := *nc.Kubelet
				e.pool.Kubelet = &k
			}
			spec.Pools = append(spec.Pools, e.pool)
		case ok:
			fail(i, e.refPath, "%s %q not found (%q is a %s)", want, e.pool.NodeClass, e.pool.NodeClass, otherKind(want))
		case badClasses[e.pool.NodeClass] == want:
			fail(i, e.refPath, "%s %q is invalid", want, e.pool.NodeClass)
		case opts.MissingNodeClassWarns:
			o := objs[i]
			var l errs
			l.add(e.refPath, "%s %q not found; planned with the AMI family's default node settings", want, e.pool.NodeClass)
			warnings = append(warnings, &ObjectError{Kind: o.Kind, Name: o.Name, Source: o.Source, Index: o.Index, Errors: l})
			spec.Pools = append(spec.Pools, e.pool)
		default:
			fail(i, e.refPath, "%s %q not found", want, e.pool.NodeClass)
		}
	}
	sort.Slice(spec.Pools, func(a, b int) bool { return spec.Pools[a].Name < spec.Pools[b].Name })

	for i := range objs {
		if oe := objErrs[i]; oe != nil {
			errList = append(errList, oe)
		}
	}
	return spec, warnings, errList
}

func otherKind(k string) string {
	if k == KindAWSNodeTemplate {
		return KindEC2NodeClass
	}
	return KindAWSNodeTemplate
}

func describe(objs []Object, idx []int) string {
	s := ""
	for n, i := range idx {
		if n > 0 {
			s += ", "
		}
		s += objs[i].Kind + " in " + objs[i].Where()
	}
	return s
}
