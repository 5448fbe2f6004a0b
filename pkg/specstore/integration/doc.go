// Package integration tests the spec stores against the local test
// ground: the SSM store against kumo and the CRD store against a real
// kube-apiserver with Joist's CRDs installed (test/testenv). It holds
// tests only; they skip when the test programs are not built (see
// `make tools`).
package integration
