package testenv

import "time"

// StartTimeout is how long the test ground waits for each program it
// starts (etcd, kube-apiserver, kumo, a function under aws-lambda-rie) to
// answer: generous, for a cold machine busy with other work; a wait ends
// as soon as the program answers.
const StartTimeout = 3 * time.Minute
