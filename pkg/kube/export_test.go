package kube

import corev1 "k8s.io/api/core/v1"

// PodPage is podPage, for tests of one page's decoding.
func PodPage(body []byte, in *Interner, f func(*corev1.Pod)) (string, error) {
	list, cont, err := pageContinue(body, podListing.kind)
	if err != nil {
		return "", err
	}
	return cont, podPage(body, list, "", &podReader{in: in}, f)
}

// PodPageBorrowed is PodPage decoding every pod into one struct
// (EachPodBorrowed).
func PodPageBorrowed(body []byte, in *Interner, f func(*corev1.Pod)) (string, error) {
	list, cont, err := pageContinue(body, podListing.kind)
	if err != nil {
		return "", err
	}
	return cont, podPage(body, list, "", &podReader{in: in, reuse: new(corev1.Pod)}, f)
}

// FilterPod is filterPod, for tests of what it drops.
func FilterPod(dst, pod []byte) ([]byte, error) { return filterPod(dst, pod) }

// NodePage is nodePage, for tests of one page's decoding.
func NodePage(body []byte, in *Interner, f func(*corev1.Node)) (string, error) {
	list, cont, err := pageContinue(body, nodeListing.kind)
	if err != nil {
		return "", err
	}
	_, err = nodePage(nil, body, list, in, f)
	return cont, err
}

// FilterNode is filterNode, for tests of what it drops.
func FilterNode(dst, node []byte) ([]byte, error) { return filterNode(dst, node) }

// SetNodePageSize makes Nodes read n nodes a page until restore is
// called.
func SetNodePageSize(n int64) (restore func()) {
	nodePageSize = n
	return func() { nodePageSize = PageSize }
}

// SplitByNamespace makes EachPod split a read into at most lists
// namespaces' lists (0: never), streams at once, until restore is called.
func SplitByNamespace(lists, streams int) (restore func()) {
	l, s := namespaceLists, namespaceStreams
	namespaceLists, namespaceStreams = lists, streams
	return func() { namespaceLists, namespaceStreams = l, s }
}

// BoundPage is podPage as EachBoundPod reads a page, for tests of one
// page's reading.
func BoundPage(body []byte, in *Interner, read BoundRead, whole func(*corev1.Pod)) (string, error) {
	list, cont, err := pageContinue(body, podListing.kind)
	if err != nil {
		return "", err
	}
	return cont, podPage(body, list, "", &podReader{in: in, reuse: new(corev1.Pod), bound: &read}, whole)
}
