package daemon

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the daemon's Prometheus metrics, registered on the
// Config.Registry.
type metrics struct {
	upcallsReceived  *prometheus.CounterVec // by kind
	upcallsHandled   *prometheus.CounterVec // by result
	controller       prometheus.Counter
	flowsInstalled   prometheus.Counter
	flowsModified    prometheus.Counter
	flowsDeleted     *prometheus.CounterVec // by reason
	flowLimitHits    prometheus.Counter
	flowsRefused     *prometheus.CounterVec // by reason
	panics           *prometheus.CounterVec // by where
	refusedBy        [numRefused]prometheus.Counter
	revalidations    prometheus.Counter
	revalDuration    prometheus.Histogram
	handlerLatency   prometheus.Histogram
	upcallsReceivedM prometheus.Counter // miss, pre-curried
	upcallsActionM   prometheus.Counter
	handledOK        prometheus.Counter
	handledFail      prometheus.Counter
	shed             prometheus.Counter
	packetInsSent    prometheus.Counter
	packetInDrop     *prometheus.CounterVec // by reason
	packetInDrops    [numPinDrops]prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, d *Daemon) *metrics {
	m := &metrics{
		upcallsReceived: newCounterVec("upcalld_upcalls_received_total", "Upcalls received from the datapath, by kind (miss, action).", "kind"),
		upcallsHandled:  newCounterVec("upcalld_upcalls_handled_total", "Upcalls processed, by result (ok, error).", "result"),
		controller:      newCounter("upcalld_controller_upcalls_total", "Upcalls of controller (userspace) actions."),
		flowsInstalled:  newCounter("upcalld_flows_installed_total", "Megaflows installed by the handlers."),
		flowsModified:   newCounter("upcalld_flows_modified_total", "Flows whose actions the revalidator changed."),
		flowsDeleted:    newCounterVec("upcalld_flows_deleted_total", "Flows the revalidator deleted, by reason (idle, limit, revalidate, unusable).", "reason"),
		shed:            newCounter("upcalld_upcalls_shed_total", "Misses an overloaded handler dropped without handling them (its upcall queue at least 7/8 full, or overrun; for receivers that report no queue depth, behind for longer than the maximum lag)."),
		flowsRefused:    newCounterVec("upcalld_megaflows_refused_total", "Misses that installed no megaflow for a reason other than the flow limit, by reason: key (the upcall's key could not be read), inexpressible (no flow the kernel accepts can match the decision's mask for that packet), actions (the actions could not be encoded), put (the datapath refused the flow), recirc (a packet came back from recirculation with a recirc_id the daemon no longer or never knew).", "reason"),
		panics:          newCounterVec("upcalld_panics_contained_total", "Panics contained and logged with their stack, by where: handler (one upcall, or one batch, failed; the handler goes on), control (one control-socket connection closed; the socket goes on), status (one status connection answered with an error; the status socket goes on).", "where"),
		packetInsSent:   newCounter("upcalld_packet_ins_total", "Packet-ins (upcalls of controller actions) sent to the status socket's packet-in subscribers."),
		packetInDrop:    newCounterVec("upcalld_packet_ins_dropped_total", "Packet-ins not sent, by reason: no_subscriber (nobody subscribed), rate_limit (over --packet-in-rate and --packet-in-burst), queue_full (one per subscriber that read too slowly).", "reason"),
		flowLimitHits:   newCounter("upcalld_flow_limit_hits_total", "Misses executed without installing a flow because the flow limit was reached."),
		revalidations:   newCounter("upcalld_revalidation_runs_total", "Revalidation passes (flow dumps) run."),
		revalDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "upcalld_revalidation_duration_seconds", Help: "Duration of a revalidation pass.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
		handlerLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "upcalld_handler_latency_seconds", Help: "Time to handle one upcall: from the read of its batch to the end of the batch's work (decide, install, execute).",
			Buckets: prometheus.ExponentialBuckets(1e-6, 2, 20),
		}),
	}
	m.upcallsReceivedM = m.upcallsReceived.WithLabelValues("miss")
	m.upcallsActionM = m.upcallsReceived.WithLabelValues("action")
	m.handledOK = m.upcallsHandled.WithLabelValues("ok")
	m.handledFail = m.upcallsHandled.WithLabelValues("error")
	m.panics.WithLabelValues(panicHandler)
	m.panics.WithLabelValues(panicControl)
	for i, r := range pinDropNames {
		m.packetInDrops[i] = m.packetInDrop.WithLabelValues(r)
	}
	for i, r := range refusedNames {
		m.refusedBy[i] = m.flowsRefused.WithLabelValues(r)
	}
	for _, r := range []string{reasonIdle, reasonLimit, reasonRevalidate, reasonUnusable} {
		m.flowsDeleted.WithLabelValues(r)
	}
	if reg == nil {
		return m
	}
	reg.MustRegister(m.upcallsReceived, m.upcallsHandled, m.controller, m.flowsInstalled, m.flowsModified,
		m.flowsDeleted, m.shed, m.packetInsSent, m.packetInDrop, m.flowLimitHits, m.flowsRefused, m.panics, m.revalidations, m.revalDuration, m.handlerLatency,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "upcalld_flows", Help: "Flows the daemon currently tracks in the datapath.",
		}, func() float64 { return float64(d.flows.len()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "upcalld_flow_limit", Help: "The current (dynamic) flow limit.",
		}, func() float64 { return float64(d.flowLimit.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "upcalld_recirc_ids", Help: "Recirculation IDs in use (one per ct action with table= and continuation table that some flow refers to, or did until a pass ago).",
		}, func() float64 { return float64(d.recirc.Len()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "upcalld_upcalls_lost_total", Help: "Upcalls the datapath lost since the daemon started (queue full, ENOBUFS, no handler), from the datapath's statistics.",
		}, func() float64 { return float64(d.lost.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "upcalld_revalidator_lag_seconds", Help: "Time since the last revalidation pass ended (since the start before the first): about the revalidation interval at most while the revalidator keeps up.",
		}, func() float64 { return d.revalidatorLag(time.Now()).Seconds() }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "upcalld_revalidation_interval_seconds", Help: "The configured period of revalidation passes (--revalidate-interval).",
		}, func() float64 { return d.cfg.RevalidateInterval.Seconds() }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "upcalld_upcall_socket_overruns_total", Help: "Receive overruns the upcall receivers saw (ENOBUFS on a kernel upcall socket), where they report them.",
		}, func() float64 { return float64(d.receiverLost()) }),
	)
	return m
}

// Reasons for deleting a flow.
const (
	reasonIdle       = "idle"
	reasonLimit      = "limit"
	reasonRevalidate = "revalidate"
	reasonUnusable   = "unusable"
)

// Reasons for a miss to install no megaflow (upcalld_megaflows_refused_total).
type refusedReason uint8

const (
	refusedKey refusedReason = iota
	refusedInexpressible
	refusedActions
	refusedPut
	refusedRecirc
	numRefused
)

var refusedNames = [numRefused]string{"key", "inexpressible", "actions", "put", "recirc"}

// refused counts a miss that installed no megaflow, for reason r.
func (m *metrics) refused(r refusedReason) { m.refusedBy[r].Inc() }

// newCounter and newCounterVec make a counter, or one with a label.
func newCounter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
}

func newCounterVec(name, help, label string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{label})
}
