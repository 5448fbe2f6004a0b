package provisioning

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"

	"github.com/joist-dev/joist/pkg/catalog"
	"github.com/joist-dev/joist/pkg/garbage"
	"github.com/joist-dev/joist/pkg/kube"
	"github.com/joist-dev/joist/pkg/launch"
	"github.com/joist-dev/joist/pkg/model"
	"github.com/joist-dev/joist/pkg/pods"
	"github.com/joist-dev/joist/pkg/scheduling"
	"github.com/joist-dev/joist/pkg/scheduling/fromcatalog"
)

// cluster is the truth one reconcile works from.
type cluster struct {
	spec      *model.Spec
	instances []launch.Instance
	nodes     []*corev1.Node
	// bound are the pods on each node, by node name, that the pass may
	// move or whose terms it reads (see readBound); compact are all the
	// others, in the least the simulator reads of them.
	bound   map[string][]*corev1.Pod
	compact map[string][]scheduling.BoundPod
	pending []*corev1.Pod
	// planned are pending pods waiting for a live instance, by instance.
	planned map[string][]*corev1.Pod
	// todo are pending pods no live instance waits for.
	todo []*corev1.Pod
	// objects are what else the simulator reads (ReadCluster), read only
	// when there is something to plan.
	objects fromcatalog.Cluster
	// retiring are nodes going away (Provisioner.Replace): not capacity.
	retiring map[string]bool
	// moving are running pods planned as if evicted (by UID): their plan
	// is recorded as pods.AnnotationReplacement.
	moving map[types.UID]bool
	// reservations are the active capacity reservations each node class
	// selects (readReservations), read only when there is something to
	// plan; reservedUsed counts the instances this pass launched into
	// each, by reservation ID (EC2's counts were read before them).
	reservations map[string][]launch.Reservation
	reservedUsed map[string]int
	// ready is the pass's ReadyPools and zoneIDs its zones' IDs, once
	// asked (Provisioner.readiness, Provisioner.zoneIDs).
	ready       *Readiness
	zoneIDs     map[string]string
	zoneIDsRead bool
	// byName and byID index nodes and instances (built on first use).
	byName  map[string]*corev1.Node
	byID    map[string]int
	indexed int
}

// asMoving is a running pod as the simulator must see it to place it
// elsewhere: without its node.
func (c *cluster) asMoving(pod *corev1.Pod) *corev1.Pod {
	if c.moving == nil {
		c.moving = map[types.UID]bool{}
	}
	c.moving[pod.UID] = true
	pod = pod.DeepCopy()
	pod.Spec.NodeName = ""
	return pod
}

// read gathers the truth. The cluster's instances (EC2), the nodes and
// the pending pods are read at once (none of these reads waits for
// another): an instance is either matched to a node or in flight,
// whichever of the two reads sees it first, and no instance is launched
// during a pass's read (the provisioner's lease serializes the passes that
// launch). A pod the bound pods' read finds on a node the nodes' read did
// not was bound after the node list's revision (its node registered
// after it), as a pod kube-scheduler binds after the read is: neither
// counts.
//
// Every Kubernetes read is a consistent one, paginated and reduced as it
// arrives (pkg/kube: EachPod, Nodes; docs/scale.md): pending pods must
// include the pod whose event woke the pass, and nodes and bound pods are
// the room the simulator gives away, so a stale read would plan pods onto
// room already taken. A large read is split by namespace, each list of its
// own revision after the pass began (kube.EachPod): a pod that was bound
// before the pass is counted; one bound or deleted during it may or may
// not be, as with one list. The bound pods, by far the largest read, are read
// only when the pass has something to plan (needsBound); when a pending
// pod is planned onto no instance, or nodes are being replaced, that is
// known as soon as the pending pods are read (a list of few pods), and
// their read starts then, while the nodes' and EC2's go on (at 5,000 nodes
// and instances, the nodes' read takes half a second, and decoding
// DescribeInstances' pages longer), rather than after them.
func (p *Provisioner) read(ctx context.Context) (*cluster, error) {
	c := &cluster{bound: map[string][]*corev1.Pod{}, compact: map[string][]scheduling.BoundPod{}, planned: map[string][]*corev1.Pod{}}
	var err error
	if c.spec, err = p.Specs(ctx); err != nil {
		return nil, fmt.Errorf("read specs: %w", err)
	}
	var instErr, nodesErr error
	instDone, nodesDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(instDone)
		c.instances, instErr = p.Launcher.Instances(ctx)
	}()
	go func() {
		defer close(nodesDone)
		c.nodes, nodesErr = p.Kube.Nodes(ctx)
	}()
	c.pending, err = p.Kube.PendingPods(ctx)
	// A pending pod planned onto no instance is a pod to plan whatever
	// the other reads say, and nodes being replaced are planned away
	// whatever they say: the bound pods are needed.
	var boundErr error
	var boundDone chan struct{}
	if err == nil && (anyUnplanned(c.pending) || p.retiring != nil) {
		bctx, cancel := context.WithCancel(ctx)
		defer cancel()
		boundDone = make(chan struct{})
		go func() {
			defer close(boundDone)
			boundErr = p.readBound(bctx, c)
		}()
		defer func() {
			cancel()
			<-boundDone
		}()
	}
	<-nodesDone
	<-instDone
	if err == nil {
		err = nodesErr
	}
	if instErr != nil {
		return nil, instErr
	}
	if err != nil {
		return nil, err
	}
	live := map[string]bool{}
	for _, i := range c.instances {
		live[i.ID] = true
	}
	for _, pod := range c.pending {
		if id := pods.PlannedInstance(pod); id != "" && live[id] {
			c.planned[id] = append(c.planned[id], pod)
			continue
		}
		c.todo = append(c.todo, pod)
	}
	if boundDone != nil {
		<-boundDone
		if boundErr != nil {
			return nil, boundErr
		}
	} else if p.needsBound(c) {
		if err := p.readBound(ctx, c); err != nil {
			return nil, err
		}
	}
	c.reserveReplacements(live)
	if p.retiring != nil {
		c.retireNodes(p.retiring.Nodes, live)
	}
	return c, nil
}

// registered are the instance IDs the nodes name (their provider IDs).
func (c *cluster) registered() map[string]bool {
	out := make(map[string]bool, len(c.nodes))
	for _, n := range c.nodes {
		if id := pods.InstanceID(n.Spec.ProviderID); id != "" {
			out[id] = true
		}
	}
	return out
}

// anyUnplanned says whether a pending pod is planned onto no instance.
func anyUnplanned(pending []*corev1.Pod) bool {
	for _, pod := range pending {
		if pods.PlannedInstance(pod) == "" {
			return true
		}
	}
	return false
}

// needsBound says whether the pass must read the bound pods: when there
// are pods to plan, nodes going away (Replace), or an instance whose node
// never registered (its pods, the moving ones included, are planned
// again). Otherwise the pass plans nothing and the bound pods would only
// be counted.
func (p *Provisioner) needsBound(c *cluster) bool {
	if len(c.todo) > 0 || p.retiring != nil {
		return true
	}
	registered := c.registered()
	now := p.now()
	for _, inst := range c.instances {
		if !registered[inst.ID] && garbage.Expired(inst.LaunchTime, now, p.RegistrationTimeout) {
			return true
		}
	}
	return false
}

// readBound reads the pods bound to a node that are not finished, by
// node, page by page (kube.EachBoundPod). Each is kept in its compact form
// (scheduling.BoundPod, ~100 bytes, most built straight from the wire)
// unless the pass may move it or reads more of it: a pod of a node being
// retired, one a replacement waits for (pods.AnnotationReplacement), one
// with pod affinity terms (the simulator and scheduling.ReadsNamespaces
// read them); those are read whole, reduced (kube.ReducePod), and kept
// compacted (scheduling.Compact), copied out of their page.
func (p *Provisioner) readBound(ctx context.Context, c *cluster) error {
	retiring := map[string]bool{}
	if p.retiring != nil {
		for _, n := range p.retiring.Nodes {
			retiring[n] = true
		}
	}
	// Finished pods take no room: the API server leaves them out (a
	// cluster's completed Jobs' pods are not sent), and the check below
	// keeps a reader that ignores field selectors (a fake) right.
	sel := boundSelector()
	in := kube.NewInterner()
	// Most pods are built as a BoundPod straight from the wire (the same
	// BoundPod NewBoundPod gives for the pod reduced); the rest, and
	// every pod the read cannot stand for so, are handed over whole.
	read := kube.BoundRead{
		Annotations: []string{pods.AnnotationReplacement},
		WholeNode:   func(node string) bool { return retiring[node] },
		Bound:       func(node string, b scheduling.BoundPod) { c.compact[node] = append(c.compact[node], b) },
	}
	err := p.Kube.EachBoundPod(ctx, sel, in, read, func(bp *corev1.Pod) {
		if pods.Finished(bp) {
			return
		}
		node := bp.Spec.NodeName
		if a := bp.Spec.Affinity; !retiring[node] && pods.ReplacementInstance(bp) == "" && (a == nil || a.PodAffinity == nil && a.PodAntiAffinity == nil) {
			if b, ok := scheduling.NewBoundPod(bp, in.ResourceList); ok {
				c.compact[node] = append(c.compact[node], b)
				return
			}
		}
		whole := *bp
		scheduling.Compact(&whole, in.ResourceList)
		c.bound[node] = append(c.bound[node], &whole)
	})
	if err != nil {
		return fmt.Errorf("list bound pods: %w", err)
	}
	return nil
}

// boundSelector selects the pods bound to a node that are not finished.
func boundSelector() string {
	return fields.AndSelectors(
		fields.OneTermNotEqualSelector("spec.nodeName", ""),
		fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded)),
		fields.OneTermNotEqualSelector("status.phase", string(corev1.PodFailed)),
	).String()
}

// reserveReplacements counts the running pods of nodes going away on the
// live instance launched to take them (pods.AnnotationReplacement), so
// their room is not given away before they move.
func (c *cluster) reserveReplacements(live map[string]bool) {
	for _, n := range c.nodes {
		own := pods.InstanceID(n.Spec.ProviderID)
		for _, pod := range c.bound[n.Name] {
			if id := pods.ReplacementInstance(pod); id != "" && id != own && live[id] && pods.Reschedulable(pod) {
				c.planned[id] = append(c.planned[id], c.asMoving(pod))
			}
		}
	}
}

// retireNodes takes the nodes out of the cluster the simulator sees and
// plans their reschedulable pods again, except those a live replacement
// already waits for.
func (c *cluster) retireNodes(names []string, live map[string]bool) {
	if c.retiring == nil {
		c.retiring = map[string]bool{}
	}
	for _, name := range names {
		node := c.node(name)
		if node == nil {
			continue
		}
		c.retiring[name] = true
		own := pods.InstanceID(node.Spec.ProviderID)
		for _, pod := range c.bound[name] {
			if !pods.Reschedulable(pod) {
				continue
			}
			if id := pods.ReplacementInstance(pod); id != "" && id != own && live[id] {
				continue // awaited by its live replacement already (read)
			}
			// Planned as if evicted already: the simulator places only
			// pods without a node.
			c.todo = append(c.todo, c.asMoving(pod))
		}
		// Pending pods planned onto the retiring instance itself (it may
		// not be Ready yet) are planned again.
		if own != "" {
			c.todo = append(c.todo, c.planned[own]...)
			delete(c.planned, own)
		}
	}
}

// describe is the instance with the id, as EC2 reported it (or just its
// id when it is not among the cluster's instances).
func (c *cluster) describe(id string) launch.Instance {
	// Instances are only appended after the index is first built (a
	// launch), so indexing the new tail keeps it whole.
	if c.byID == nil {
		c.byID = make(map[string]int, len(c.instances))
	}
	for ; c.indexed < len(c.instances); c.indexed++ {
		c.byID[c.instances[c.indexed].ID] = c.indexed
	}
	if i, ok := c.byID[id]; ok {
		return c.instances[i]
	}
	return launch.Instance{ID: id}
}

func (c *cluster) node(name string) *corev1.Node {
	if c.byName == nil {
		c.byName = make(map[string]*corev1.Node, len(c.nodes))
		for _, n := range c.nodes {
			c.byName[n.Name] = n
		}
	}
	return c.byName[name]
}

// readForPlanning reads what only planning needs (ReadCluster) for the
// pods to plan among the bound ones.
func (p *Provisioner) readForPlanning(ctx context.Context, c *cluster) error {
	// The pools as planning may use them; launches and everything else
	// read the spec's own (c.spec).
	objs, err := ReadCluster(ctx, p.Kube, p.readiness(ctx, c).Spec(c.spec), c.todo, c.boundGroups()...)
	if err != nil {
		return err
	}
	c.objects = objs
	p.readReservations(ctx, c)
	return nil
}

// ReadCluster reads what the simulator needs of a cluster besides pods
// and nodes (fromcatalog.Cluster: the spec's pools and node classes, and)
// to place the pods of place among those of others: the DaemonSets; the namespaces when a pod's affinity selects
// namespaces by label (scheduling.ReadsNamespaces); the volumes when a pod
// to place has claims. The provisioner reads it for the pods it plans,
// consolidation for the pods of the nodes it would retire, so both plan a
// pod alike.
func ReadCluster(ctx context.Context, k *kube.Client, spec *model.Spec, place []*corev1.Pod, others ...[]*corev1.Pod) (fromcatalog.Cluster, error) {
	out := fromcatalog.Cluster{Pools: spec.Pools, NodeClasses: spec.NodeClasses, Overlays: spec.Overlays}
	ds, err := k.AppsV1().DaemonSets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return out, fmt.Errorf("list daemonsets: %w", err)
	}
	for i := range ds.Items {
		out.DaemonSets = append(out.DaemonSets, &ds.Items[i])
	}
	if scheduling.ReadsNamespaces(append([][]*corev1.Pod{place}, others...)...) {
		ns, err := k.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			return out, fmt.Errorf("list namespaces: %w", err)
		}
		for i := range ns.Items {
			out.Namespaces = append(out.Namespaces, &ns.Items[i])
		}
	}
	if needsVolumes(place) {
		if err := readVolumes(ctx, k, &out); err != nil {
			return out, err
		}
	}
	return out, nil
}

// boundGroups are the pods bound to each node: their terms decide a
// placement as much as those of the pods to plan.
func (c *cluster) boundGroups() [][]*corev1.Pod {
	groups := make([][]*corev1.Pod, 0, len(c.bound))
	for _, ps := range c.bound {
		groups = append(groups, ps)
	}
	return groups
}

func needsVolumes(ps []*corev1.Pod) bool {
	for _, p := range ps {
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
				return true
			}
		}
	}
	return false
}

func readVolumes(ctx context.Context, k *kube.Client, out *fromcatalog.Cluster) error {
	pvcs, err := k.CoreV1().PersistentVolumeClaims(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list persistent volume claims: %w", err)
	}
	for i := range pvcs.Items {
		out.PersistentVolumeClaims = append(out.PersistentVolumeClaims, &pvcs.Items[i])
	}
	pvs, err := k.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list persistent volumes: %w", err)
	}
	for i := range pvs.Items {
		out.PersistentVolumes = append(out.PersistentVolumes, &pvs.Items[i])
	}
	scs, err := k.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list storage classes: %w", err)
	}
	for i := range scs.Items {
		out.StorageClasses = append(out.StorageClasses, &scs.Items[i])
	}
	csiNodes, err := k.StorageV1().CSINodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list csinodes: %w", err)
	}
	out.VolumeLimits = csiNodeLimits(csiNodes.Items)
	return nil
}

// csiNodeLimits are the attachment limits the CSINodes publish
// (drivers[].allocatable.count), by node name; a driver without a count
// is not limited.
func csiNodeLimits(nodes []storagev1.CSINode) map[string]map[string]int64 {
	out := map[string]map[string]int64{}
	for _, n := range nodes {
		for _, d := range n.Spec.Drivers {
			if d.Allocatable == nil || d.Allocatable.Count == nil {
				continue
			}
			if out[n.Name] == nil {
				out[n.Name] = map[string]int64{}
			}
			out[n.Name][d.Name] = int64(*d.Allocatable.Count)
		}
	}
	return out
}

// instanceClass is the spec's node class an instance was launched from
// (its tag; an instance without one, its pool's class): it sizes and
// labels the node (nil when the pass has no spec or the class is gone).
func (c *cluster) instanceClass(inst launch.Instance) *model.NodeClass {
	if c.spec == nil {
		return nil
	}
	name := inst.NodeClass
	for _, pool := range c.spec.Pools {
		if name == "" && pool.Name == inst.Pool {
			name = pool.NodeClass
		}
	}
	return c.spec.NodeClasses[name]
}

// simulatorNodes describes the existing nodes and the in-flight instances
// (tagged for the cluster, not registered yet) to the simulator, each
// holding the pods bound to it or planned onto it.
func (p *Provisioner) simulatorNodes(c *cluster) []*scheduling.Node {
	var out []*scheduling.Node
	registered := map[string]bool{}
	pools := map[string]*model.Pool{}
	for _, pl := range c.spec.Pools {
		pools[pl.Name] = pl
	}
	for _, n := range c.nodes {
		id := pods.InstanceID(n.Spec.ProviderID)
		if id != "" {
			registered[id] = true
		}
		if c.retiring[n.Name] {
			continue
		}
		pool := n.Labels[model.LabelNodePool]
		if pool == "" {
			pool = n.Labels[model.LabelProvisionerName]
		}
		onNode := append(append([]*corev1.Pod(nil), c.bound[n.Name]...), c.planned[id]...)
		out = append(out, &scheduling.Node{
			Name: n.Name, Pool: pool, Labels: n.Labels, Taints: withoutStartupTaints(n.Spec.Taints, pools[pool]),
			Unschedulable: n.Spec.Unschedulable || n.DeletionTimestamp != nil || !pods.NodeReady(n) && !isNew(n),
			Capacity:      n.Status.Capacity, Allocatable: n.Status.Allocatable, Pods: onNode, Bound: c.compact[n.Name],
			VolumeLimits: c.objects.VolumeLimits[n.Name],
		})
	}
	for _, inst := range c.instances {
		if registered[inst.ID] {
			continue
		}
		pool := pools[inst.Pool]
		t, ok := p.Catalog.Lookup(inst.InstanceType)
		if pool == nil || !ok {
			// Capacity Joist cannot describe (its pool is gone or its type
			// unknown) is not counted; the reaper retires it.
			continue
		}
		nc := c.instanceClass(inst)
		labels := t.LabelsFor(nc)
		for k, v := range poolLabels(pool) {
			labels[k] = v
		}
		labels[model.LabelZone] = inst.Zone
		labels[model.LabelCapacityType] = inst.CapacityType
		if inst.ReservationID != "" {
			labels[model.LabelReservationID] = inst.ReservationID
			if r, ok := c.reservation(inst.ReservationID); ok {
				labels[model.LabelReservationType] = reservationType(r)
			}
		}
		labels[model.LabelRegion] = p.Catalog.Region()
		labels[model.LabelHostname] = inst.ID
		price, _ := p.Catalog.Price(inst.InstanceType, inst.CapacityType)
		out = append(out, &scheduling.Node{
			Name: inst.ID, Pool: pool.Name, InFlight: true, Labels: labels, Taints: pool.Taints,
			Capacity: t.CapacityFor(pool.Kubelet, nc), Allocatable: t.AllocatableFor(pool.Kubelet, nc),
			Pods: c.planned[inst.ID], PricePerHour: price,
		})
	}
	return out
}

// isNew is a node that registered but is not Ready yet: still capacity
// on its way, like an in-flight instance.
func isNew(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Reason == "" || c.Reason == "KubeletNotReady"
		}
	}
	return true
}

// withoutStartupTaints drops the pool's startup taints and the node
// lifecycle's not-ready taint: both go away on their own.
func withoutStartupTaints(ts []corev1.Taint, pool *model.Pool) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range ts {
		if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
			continue
		}
		startup := false
		if pool != nil {
			for _, s := range pool.StartupTaints {
				if s.Key == t.Key && s.Effect == t.Effect {
					startup = true
				}
			}
		}
		if !startup {
			out = append(out, t)
		}
	}
	return out
}

// poolLabels are the labels every node of the pool carries: the values its
// requirements fix, its labels, and the pool name label.
func poolLabels(p *model.Pool) map[string]string {
	l := map[string]string{}
	for _, r := range p.Requirements {
		if r.Operator == string(corev1.NodeSelectorOpIn) && len(r.Values) == 1 {
			l[r.Key] = r.Values[0]
		}
	}
	for k, v := range p.Labels {
		l[k] = v
	}
	l[p.Label()] = p.Name
	return l
}

// launchOptions are every offering CreateFleet may pick for a new node:
// each instance-type option in each of the node's zones and capacity
// types that the catalog offers and that is not marked unavailable. Each
// carries its pod capacity from the same catalog the plan was made with
// (the pool's kubelet settings, else the node class's, as the launch reads
// them), so the node is told the number the plan sized it with even for a
// type only the live catalog knows. overlaid are the pool's offerings a
// NodeOverlay prices (fromcatalog.PoolPrices): they carry that price, as
// the plan does.
func launchOptions(cat *catalog.Catalog, n scheduling.NewNode, pool *model.Pool, nc *model.NodeClass, overlaid map[string]float64, unavailable func(t, z, ct string) bool) []launch.Option {
	kubelet := pool.Kubelet
	if kubelet == nil && nc != nil {
		kubelet = nc.Kubelet
	}
	zones := map[string]bool{}
	for _, z := range n.Zones {
		zones[z] = true
	}
	cts := map[string]bool{}
	for _, ct := range n.CapacityTypes {
		cts[ct] = true
	}
	var out []launch.Option
	if id := n.Labels[model.LabelReservationID]; id != "" {
		// A node planned into a reservation: its one type and zone,
		// launched into that reservation.
		o := n.InstanceTypeOptions[0]
		t, ok := cat.Lookup(o.Name)
		if !ok || unavailable(o.Name, o.Zone, model.CapacityTypeReserved) {
			return nil
		}
		return []launch.Option{{
			InstanceType: o.Name, Arch: t.Arch, Variant: amiVariant(t), Zone: o.Zone,
			CapacityType: model.CapacityTypeReserved, MaxPods: t.MaxPodsFor(kubelet, nc), Kubelet: t.KubeletFor(kubelet, nc),
			ReservationID: id, ReservationType: n.Labels[model.LabelReservationType],
		}}
	}
	for _, o := range n.InstanceTypeOptions {
		t, ok := cat.Lookup(o.Name)
		if !ok {
			continue
		}
		variant := amiVariant(t)
		kt := t.KubeletFor(kubelet, nc)
		maxPods := t.MaxPodsFor(kt, nc)
		for _, off := range cat.Offerings(o.Name) {
			if !zones[off.Zone] || !cts[off.CapacityType] || unavailable(o.Name, off.Zone, off.CapacityType) {
				continue
			}
			price, isOverlaid := overlaid[fromcatalog.OfferingKey(o.Name, off.Zone, off.CapacityType)]
			if !isOverlaid {
				price = off.Price
			}
			out = append(out, launch.Option{
				InstanceType: o.Name, Arch: t.Arch, Variant: variant,
				Zone: off.Zone, CapacityType: off.CapacityType, Price: price, PriceOverlaid: isOverlaid,
				MaxPods: maxPods, Kubelet: kt,
			})
		}
	}
	return out
}

// amiVariant is the AMI variant a type needs: "nvidia" for NVIDIA GPUs,
// "neuron" for AWS accelerators, else "standard".
func amiVariant(t *catalog.InstanceType) string {
	switch {
	case t.GPUCount > 0 && t.GPUManufacturer == "nvidia":
		return "nvidia"
	case t.AcceleratorManufacturer == "aws":
		return "neuron"
	}
	return "standard"
}
