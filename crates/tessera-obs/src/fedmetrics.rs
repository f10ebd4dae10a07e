//! Metrics of federated views (`tessera-fed`), set at each scrape from the
//! federation's own state: each endpoint's health and latency as the
//! probes and lookups see them, and how lookups were answered.
//! Part of [`crate::Metrics`] (one registry).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};
use std::sync::atomic::AtomicU64;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct EndpointLabels {
    pub endpoint: String,
    pub site: String,
}

type GaugeU = Gauge<u64, AtomicU64>;
type GaugeF = Gauge<f64, AtomicU64>;

pub struct FedMetrics {
    /// 1 while the endpoint is in the choices, 0 after its failed probes.
    pub endpoint_up: Family<EndpointLabels, GaugeU>,
    pub endpoint_latency: Family<EndpointLabels, GaugeF>,
    /// Clients sent lately and lookups in flight, as a share of
    /// `load_capacity` (1: it looks twice as far away).
    pub endpoint_load: Family<EndpointLabels, GaugeF>,
    /// Lookups answered from the cache, and sent to the endpoints, since
    /// start.
    pub lookups_cached: GaugeU,
    pub lookups_asked: GaugeU,
    pub cache_entries: GaugeU,
}

impl FedMetrics {
    pub fn register(r: &mut Registry) -> FedMetrics {
        let m = FedMetrics {
            endpoint_up: Family::default(),
            endpoint_latency: Family::default(),
            endpoint_load: Family::default(),
            lookups_cached: GaugeU::default(),
            lookups_asked: GaugeU::default(),
            cache_entries: GaugeU::default(),
        };
        r.register(
            "federation_endpoint_up",
            "1 while a federation endpoint is among the choices, 0 once it failed probe_failures probes in a row",
            m.endpoint_up.clone(),
        );
        r.register_with_unit(
            "federation_endpoint_latency",
            "Moving average of a federation endpoint's probe and lookup times",
            Unit::Seconds,
            m.endpoint_latency.clone(),
        );
        r.register(
            "federation_endpoint_load",
            "Clients a federation endpoint was sent lately (halving every 10 s) plus lookups in flight there, over load_capacity",
            m.endpoint_load.clone(),
        );
        r.register(
            "federation_lookups_cached",
            "Lookups of a file of a view answered from the cache, since start",
            m.lookups_cached.clone(),
        );
        r.register(
            "federation_lookups_asked",
            "Lookups of a file of a view sent to the view's endpoints, since start",
            m.lookups_asked.clone(),
        );
        r.register(
            "federation_cache_entries",
            "Files of views remembered (found somewhere, or nowhere)",
            m.cache_entries.clone(),
        );
        m
    }
}
