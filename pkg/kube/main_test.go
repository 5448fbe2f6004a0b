package kube_test

import (
	"testing"

	"github.com/joist-dev/joist/test/testenv"
)

// TestMain stops the package's kube-apiserver and etcd after its tests.
func TestMain(m *testing.M) { testenv.Main(m) }
