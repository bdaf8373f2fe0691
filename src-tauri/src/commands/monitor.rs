//! Monitor: live telemetry of a saved host. Each watch is a registered operation (its op id comes
//! first on `on_progress`; `op_cancel` stops it); its stream's news arrive on its own channel.
//! Samples go on the window's one feed (`monitor_feed`) where it has one — every watch's samples
//! of the last second in ONE message, so N hosts cost the WebView one script evaluation a second,
//! not N — and on the watch's own `on_sample` otherwise. Several watches run at once, one per host.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use gpurent_core::infra::events::Progress;
use gpurent_core::monitor::stream::{Flow, TelemetryEvent};
use gpurent_core::monitor::watch::{WatchEvent, WatchSample};
use tauri::ipc::Channel;
use tauri::State;

use crate::commands::ops::{blocking, sink};
use crate::commands::ssh_env;
use crate::edge::{err, CmdResult};
use crate::state::AppState;

/// How often the feed sends what arrived (the Monitor draws at most once a second anyway).
pub const FEED_PERIOD: Duration = Duration::from_secs(1);

#[derive(Default)]
struct FeedInner {
    channel: Option<Channel<Vec<WatchSample>>>,
    /// Every sample since the last send, in arrival order (each one is a point on the charts).
    pending: Vec<WatchSample>,
    sender: bool,
}

/// The samples of every watch, sent together once per [`FEED_PERIOD`] on the window's channel.
#[derive(Default, Clone)]
pub struct Feed(Arc<Mutex<FeedInner>>);

impl Feed {
    /// Send from now on to `channel` (a later call replaces it: the page was loaded again).
    pub fn set(&self, channel: Channel<Vec<WatchSample>>) {
        if let Ok(mut f) = self.0.lock() {
            f.channel = Some(channel);
        }
    }

    /// Keep `s` for the next send (`None`); `Some(s)` back when there is no feed (send it on the
    /// watch's own channel then).
    pub fn push(&self, s: WatchSample) -> Option<WatchSample> {
        match self.0.lock() {
            Ok(mut f) if f.channel.is_some() => {
                f.pending.push(s);
                None
            }
            _ => Some(s),
        }
    }

    /// Send what is pending, as one message (nothing when nothing arrived).
    pub fn flush(&self) {
        let (batch, channel) = match self.0.lock() {
            Ok(mut f) => (std::mem::take(&mut f.pending), f.channel.clone()),
            Err(_) => return,
        };
        if let (false, Some(ch)) = (batch.is_empty(), channel) {
            let _ = ch.send(batch);
        }
    }

    /// The thread that flushes every [`FEED_PERIOD`] (started once, lives as long as the app).
    fn start_sender(&self) {
        let Ok(mut f) = self.0.lock() else { return };
        if f.sender {
            return;
        }
        let feed = self.clone();
        f.sender = std::thread::Builder::new()
            .name("monitor-feed".into())
            .spawn(move || loop {
                std::thread::sleep(FEED_PERIOD);
                feed.flush();
            })
            .is_ok();
    }
}

/// The window's one channel for every watch's samples: `on_samples` gets, once a second, all the
/// samples that arrived meanwhile (`WatchSample[]`, each naming its host).
#[tauri::command]
pub fn monitor_feed(feed: State<'_, Feed>, on_samples: Channel<Vec<WatchSample>>) {
    feed.set(on_samples);
    feed.start_sender();
}

/// Watch `label` until cancelled (or an outcome reconnecting cannot fix: returned); an
/// `interval_ms` outside 200–60 000 is refused (`invalid_input`), as in the CLI. Samples go on the
/// feed when the window has one (`monitor_feed`), else on `on_sample`; status events always on
/// `on_status`, as they happen.
#[tauri::command]
pub async fn monitor_watch(
    state: State<'_, AppState>,
    feed: State<'_, Feed>,
    label: String,
    interval_ms: Option<u64>,
    on_progress: Channel<Progress>,
    on_sample: Channel<WatchSample>,
    on_status: Channel<TelemetryEvent>,
) -> CmdResult<()> {
    let (app, env, feed) = (state.shared()?, ssh_env()?, feed.inner().clone());
    blocking(move || {
        app.monitor_watch_op(
            &label,
            &env,
            interval_ms,
            &mut |ev| {
                let _ = match ev {
                    WatchEvent::Sample(s) => match feed.push(s) {
                        None => Ok(()),
                        Some(s) => on_sample.send(s),
                    },
                    WatchEvent::Status(s) => on_status.send(s),
                };
                Flow::Continue
            },
            &sink(on_progress),
        )
        .map_err(err)
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use tauri::ipc::InvokeResponseBody;

    fn sample(host: &str, at_ms: i64) -> WatchSample {
        WatchSample {
            host: host.into(),
            at_ms,
            gpus: vec![],
            cpu: None,
            apps: vec![],
            hints: vec![],
        }
    }

    /// A channel that records each message it carries (the JSON the WebView would get).
    fn recorder() -> (
        Channel<Vec<WatchSample>>,
        Arc<Mutex<Vec<serde_json::Value>>>,
    ) {
        let got = Arc::new(Mutex::new(Vec::new()));
        let g = got.clone();
        let ch = Channel::new(move |body| {
            if let InvokeResponseBody::Json(j) = body {
                g.lock()
                    .expect("lock")
                    .push(serde_json::from_str(&j).expect("JSON"));
            }
            Ok(())
        });
        (ch, got)
    }

    #[test]
    fn without_a_feed_samples_stay_with_their_watch() {
        let feed = Feed::default();
        let back = feed.push(sample("a", 1)).expect("no feed: given back");
        assert_eq!(back.host, "a");
    }

    #[test]
    fn every_hosts_samples_of_a_period_go_in_one_message() {
        let feed = Feed::default();
        let (ch, got) = recorder();
        feed.set(ch);
        feed.flush();
        assert!(
            got.lock().expect("lock").is_empty(),
            "nothing arrived: nothing sent"
        );
        for (host, at) in [("a", 1000), ("b", 1100), ("a", 1200), ("c", 1300)] {
            assert!(feed.push(sample(host, at)).is_none(), "kept for the feed");
        }
        feed.flush();
        feed.flush();
        let got = got.lock().expect("lock");
        assert_eq!(got.len(), 1, "one message for four samples: {got:?}");
        let sent: Vec<(String, i64)> = got[0]
            .as_array()
            .expect("an array")
            .iter()
            .map(|s| {
                (
                    s["host"].as_str().expect("host").to_string(),
                    s["at_ms"].as_i64().expect("at_ms"),
                )
            })
            .collect();
        // Every sample (each is a point on a chart), in arrival order.
        assert_eq!(
            sent,
            [("a", 1000), ("b", 1100), ("a", 1200), ("c", 1300)]
                .map(|(h, t)| (h.to_string(), t))
                .to_vec()
        );
    }

    #[test]
    fn a_page_loaded_again_gets_the_feed_on_its_new_channel() {
        let feed = Feed::default();
        let (old, old_got) = recorder();
        let (new, new_got) = recorder();
        feed.set(old);
        feed.set(new);
        assert!(feed.push(sample("a", 1)).is_none());
        feed.flush();
        assert!(old_got.lock().expect("lock").is_empty());
        assert_eq!(new_got.lock().expect("lock").len(), 1);
    }
}
