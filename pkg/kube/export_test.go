package kube

import corev1 "k8s.io/api/core/v1"

// PodPage is podPage, for tests of one page's decoding.
func PodPage(body []byte, in *Interner, f func(*corev1.Pod)) (string, error) {
	list, cont, err := pageContinue(body)
	if err != nil {
		return "", err
	}
	return cont, podPage(body, list, &podReader{in: in}, f)
}

// FilterPod is filterPod, for tests of what it drops.
func FilterPod(dst, pod []byte) ([]byte, error) { return filterPod(dst, pod) }

// SetPodPageSize makes EachPod read n pods a page until restore is
// called.
func SetPodPageSize(n int64) (restore func()) {
	podPageSize = n
	return func() { podPageSize = PageSize }
}
