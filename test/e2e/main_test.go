// Package e2e runs Joist's whole loop on the local test ground: a real
// kube-apiserver, kumo, the EC2 simulator, and the functions as real
// Lambda bootstraps under aws-lambda-rie.
package e2e

import (
	"testing"

	"github.com/joist-dev/joist/test/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
