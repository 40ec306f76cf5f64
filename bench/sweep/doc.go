// Package sweep holds the benchmark behind the report's "time against the
// number of masks" chart: the userspace datapath's whole pipeline (through
// its public API, with in-memory ports) against a plain tuple-space search
// (every mask in turn, jhash2, byte compare), for 1 to 100 masks. It has
// no non-test code.
package sweep
