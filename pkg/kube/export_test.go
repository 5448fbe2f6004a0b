package kube

import corev1 "k8s.io/api/core/v1"

// PodPage is podPage, for tests of one page's decoding.
func PodPage(body []byte, contentType string, in *Interner, f func(*corev1.Pod)) (string, error) {
	var buf []byte
	return podPage(body, contentType, &buf, in, f)
}

// FilterPod is filterPod, for tests of what it drops.
func FilterPod(dst, pod []byte) ([]byte, error) { return filterPod(dst, pod) }
