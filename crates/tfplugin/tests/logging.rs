//! hclog JSON log lines and level selection.

use std::io::Write;
use std::sync::{Arc, Mutex};

use tfplugin::{HclogLayer, hclog_timestamp, level_from_env_values, log_filter};
use tracing::level_filters::LevelFilter;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;

#[test]
fn level_comes_from_tf_log_provider_then_tf_log() {
    assert_eq!(
        level_from_env_values(Some("DEBUG"), Some("TRACE")),
        LevelFilter::DEBUG
    );
    assert_eq!(level_from_env_values(None, Some("info")), LevelFilter::INFO);
    assert_eq!(
        level_from_env_values(Some(""), Some("WARN")),
        LevelFilter::WARN
    );
    assert_eq!(
        level_from_env_values(None, Some("JSON")),
        LevelFilter::TRACE
    );
    assert_eq!(
        level_from_env_values(None, Some("ERROR")),
        LevelFilter::ERROR
    );
    assert_eq!(level_from_env_values(None, Some("off")), LevelFilter::OFF);
    assert_eq!(level_from_env_values(None, Some("bogus")), LevelFilter::OFF);
    assert_eq!(level_from_env_values(None, None), LevelFilter::OFF);
}

#[test]
fn timestamp_layout_matches_hclog() {
    let t = time::macros::datetime!(2026-01-02 03:04:05.123456789 UTC);
    assert_eq!(hclog_timestamp(t), "2026-01-02T03:04:05.123456Z");
    let other = time::macros::datetime!(2026-01-02 05:04:05.5 +02:00);
    assert_eq!(hclog_timestamp(other), "2026-01-02T03:04:05.500000Z");
}

#[derive(Clone, Default)]
struct Buf(Arc<Mutex<Vec<u8>>>);

struct BufWriter(Arc<Mutex<Vec<u8>>>);

impl Write for BufWriter {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Buf {
    type Writer = BufWriter;
    fn make_writer(&'a self) -> BufWriter {
        BufWriter(self.0.clone())
    }
}

#[test]
fn events_become_json_lines() {
    let buf = Buf::default();
    let subscriber = tracing_subscriber::registry().with(tracing_subscriber::Layer::with_filter(
        HclogLayer::new(buf.clone()),
        log_filter(LevelFilter::DEBUG),
    ));
    tracing::subscriber::with_default(subscriber, || {
        tracing::info!(
            instance = "demo",
            attempts = 3_u64,
            ok = true,
            "applied plan"
        );
        tracing::trace!("too detailed");
        tracing::debug!(target: "h2::codec", "frame noise");
        tracing::warn!(target: "h2::codec", "transport warning");
    });
    let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{text}");
    let first = &lines[0];
    assert_eq!(first["@level"], "info");
    assert_eq!(first["@message"], "applied plan");
    assert_eq!(first["@module"], "provider");
    assert_eq!(first["instance"], "demo");
    assert_eq!(first["attempts"], 3);
    assert_eq!(first["ok"], true);
    let ts = first["@timestamp"].as_str().unwrap();
    assert_eq!(ts.len(), "2006-01-02T15:04:05.000000Z".len(), "{ts}");
    assert!(ts.ends_with('Z'));
    assert_eq!(lines[1]["@level"], "warn");
}
