//go:build tools

// The JobSet controller (sigs.k8s.io/jobset, its main package at the module's root), built from
// the Go module proxy as a test tool by jobset_e2e.sh; never shipped.
package tools

import _ "sigs.k8s.io/jobset"
