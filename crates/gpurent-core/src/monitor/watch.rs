//! From stream events to samples a screen or `gpurent watch` shows: each GPU sample joined with
//! the latest host sample and compute apps, and the hints over the recent window.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::hints::{Hint, Sample, Window};
use super::hoststats::HostSample;
use super::stream::TelemetryEvent;
use super::telemetry::{ComputeApp, GpuRow};

/// Samples the hints look back over (at 1 Hz: the last 30 s).
pub const HINT_WINDOW: usize = 30;

/// One sample of one host, with its hints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct WatchSample {
    /// The saved host's label.
    pub host: String,
    pub at_ms: i64,
    pub gpus: Vec<GpuRow>,
    /// CPU, RAM, disk and network (`None` until the first host sample arrived).
    pub cpu: Option<HostSample>,
    pub apps: Vec<ComputeApp>,
    pub hints: Vec<Hint>,
}

/// What a watcher sees: samples, and the stream's own news.
#[derive(Debug, Clone, PartialEq)]
pub enum WatchEvent {
    Sample(WatchSample),
    /// `Connected`, `Disconnected` or `GpuUnavailable` (never a sample event).
    Status(TelemetryEvent),
}

/// Joins stream events into [`WatchSample`]s. A host without GPU telemetry gives one sample per
/// host sample; otherwise one per GPU sample.
#[derive(Debug, Clone)]
pub struct Assembler {
    host: String,
    cpu: Option<HostSample>,
    apps: Vec<ComputeApp>,
    gpu_less: bool,
    window: Window,
}

impl Assembler {
    pub fn new(host: &str, window: usize) -> Assembler {
        Assembler {
            host: host.to_string(),
            cpu: None,
            apps: Vec::new(),
            gpu_less: false,
            window: Window::new(window),
        }
    }

    pub fn push(&mut self, ev: TelemetryEvent) -> Option<WatchEvent> {
        match ev {
            TelemetryEvent::Gpus { at_ms, gpus } => {
                Some(WatchEvent::Sample(self.sample(at_ms, gpus)))
            }
            TelemetryEvent::Host { at_ms, host } => {
                self.cpu = Some(host);
                self.gpu_less
                    .then(|| WatchEvent::Sample(self.sample(at_ms, Vec::new())))
            }
            TelemetryEvent::Apps { apps, .. } => {
                self.apps = apps;
                None
            }
            ev @ TelemetryEvent::GpuUnavailable { .. } => {
                self.gpu_less = true;
                Some(WatchEvent::Status(ev))
            }
            ev @ TelemetryEvent::Connected { .. } => {
                if let TelemetryEvent::Connected { reasons, .. } = &ev {
                    self.gpu_less = reasons.is_none();
                }
                Some(WatchEvent::Status(ev))
            }
            ev @ TelemetryEvent::Disconnected { .. } => Some(WatchEvent::Status(ev)),
        }
    }

    fn sample(&mut self, at_ms: i64, gpus: Vec<GpuRow>) -> WatchSample {
        let s = Sample {
            at_ms,
            gpus,
            host: self.cpu.clone(),
            apps: self.apps.clone(),
        };
        self.window.push(s.clone());
        WatchSample {
            host: self.host.clone(),
            at_ms,
            gpus: s.gpus,
            cpu: s.host,
            apps: s.apps,
            hints: self.window.hints(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monitor::telemetry::ReasonNames;

    #[test]
    fn gpu_samples_carry_the_latest_host_sample_and_apps() {
        let mut a = Assembler::new("box", 10);
        let connected = TelemetryEvent::Connected {
            attempt: 1,
            reasons: Some(ReasonNames::Event),
            dropped_fields: vec![],
        };
        assert!(matches!(a.push(connected), Some(WatchEvent::Status(_))));
        let host = HostSample {
            cpu_pct: Some(12.0),
            ..HostSample::default()
        };
        assert_eq!(a.push(TelemetryEvent::Host { at_ms: 1, host }), None);
        let apps = vec![ComputeApp {
            gpu_uuid: Some("GPU-1".into()),
            pid: Some(7),
            used_memory_mib: Some(10.0),
            ..ComputeApp::default()
        }];
        assert_eq!(a.push(TelemetryEvent::Apps { at_ms: 1, apps }), None);
        let gpus = vec![GpuRow {
            index: Some(0),
            ..GpuRow::default()
        }];
        match a.push(TelemetryEvent::Gpus { at_ms: 2, gpus }) {
            Some(WatchEvent::Sample(s)) => {
                assert_eq!(s.host, "box");
                assert_eq!(s.at_ms, 2);
                assert_eq!(s.cpu.and_then(|c| c.cpu_pct), Some(12.0));
                assert_eq!(s.apps[0].pid, Some(7));
                assert!(s.hints.is_empty());
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_host_without_gpus_gives_a_sample_per_host_sample() {
        let mut a = Assembler::new("cpu-box", 10);
        a.push(TelemetryEvent::GpuUnavailable {
            message: "No devices were found".into(),
        });
        a.push(TelemetryEvent::Connected {
            attempt: 1,
            reasons: None,
            dropped_fields: vec![],
        });
        let ev = a.push(TelemetryEvent::Host {
            at_ms: 5,
            host: HostSample::default(),
        });
        assert!(matches!(ev, Some(WatchEvent::Sample(s)) if s.gpus.is_empty() && s.cpu.is_some()));
    }
}
