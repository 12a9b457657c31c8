//! hclog-compatible JSON logs on stderr.
//!
//! go-plugin reads each stderr line of the plugin as JSON and forwards it
//! into Terraform's own log with the level in `@level`, the text in
//! `@message` and any other keys as fields. Lines that are not JSON are
//! still shown, but at a fixed level, so we always write JSON. stdout is
//! reserved for the handshake line.

use std::io::Write;

use serde_json::{Map, Value as Json};
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;

/// Module name go-plugin shows next to provider log lines.
const MODULE: &str = "provider";

/// Level from `TF_LOG_PROVIDER`, else `TF_LOG`: TRACE/DEBUG/INFO/WARN/ERROR
/// (any case), `JSON` meaning TRACE; anything else (unset, OFF, …) is off.
pub fn level_from_env_values(tf_log_provider: Option<&str>, tf_log: Option<&str>) -> LevelFilter {
    let raw = tf_log_provider
        .filter(|s| !s.trim().is_empty())
        .or(tf_log)
        .unwrap_or("");
    match raw.trim().to_ascii_uppercase().as_str() {
        "TRACE" | "JSON" => LevelFilter::TRACE,
        "DEBUG" => LevelFilter::DEBUG,
        "INFO" => LevelFilter::INFO,
        "WARN" => LevelFilter::WARN,
        "ERROR" => LevelFilter::ERROR,
        _ => LevelFilter::OFF,
    }
}

pub fn level_from_env() -> LevelFilter {
    level_from_env_values(
        std::env::var("TF_LOG_PROVIDER").ok().as_deref(),
        std::env::var("TF_LOG").ok().as_deref(),
    )
}

/// Installs the global subscriber: hclog JSON on stderr at the level from the
/// environment. Does nothing if a subscriber is already installed.
pub fn init_logging() {
    let _ = tracing_subscriber::registry()
        .with(HclogLayer::new(std::io::stderr).with_filter(log_filter(level_from_env())))
        .try_init();
}

/// Crates under the gRPC stack that log every HTTP/2 frame at debug/trace;
/// their detail drowns the provider's own lines, so they stop at INFO.
const NOISY_TARGETS: &[&str] = &[
    "h2",
    "hyper",
    "hyper_util",
    "tonic",
    "tower",
    "rustls",
    "tokio_rustls",
];

/// `level` for everything, capped at INFO for the transport crates.
pub fn log_filter(level: LevelFilter) -> Targets {
    let capped = level.min(LevelFilter::INFO);
    NOISY_TARGETS
        .iter()
        .fold(Targets::new().with_default(level), |t, name| {
            t.with_target(*name, capped)
        })
}

/// A `tracing` layer writing one hclog JSON object per event.
pub struct HclogLayer<W> {
    make_writer: W,
}

impl<W> HclogLayer<W>
where
    W: for<'a> MakeWriter<'a> + Send + Sync + 'static,
{
    pub fn new(make_writer: W) -> HclogLayer<W> {
        HclogLayer { make_writer }
    }
}

fn hclog_level(level: &Level) -> &'static str {
    match *level {
        Level::TRACE => "trace",
        Level::DEBUG => "debug",
        Level::INFO => "info",
        Level::WARN => "warn",
        Level::ERROR => "error",
    }
}

/// hclog's timestamp layout `2006-01-02T15:04:05.000000Z07:00`, in UTC.
pub fn hclog_timestamp(t: time::OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    let fmt = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]Z"
    );
    t.format(&fmt).unwrap_or_default()
}

#[derive(Default)]
struct FieldCollector {
    message: Option<String>,
    fields: Map<String, Json>,
}

impl Visit for FieldCollector {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.put(field, Json::String(format!("{value:?}")));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, Json::String(value.to_string()));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, Json::from(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, Json::from(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, Json::from(value));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.put(field, Json::from(value));
    }
    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        // Display, with causes: what a user reading TF_LOG output wants.
        let mut text = value.to_string();
        let mut source = value.source();
        while let Some(s) = source {
            text.push_str(": ");
            text.push_str(&s.to_string());
            source = s.source();
        }
        self.put(field, Json::String(text));
    }
}

impl FieldCollector {
    fn put(&mut self, field: &Field, value: Json) {
        if field.name() == "message" {
            self.message = Some(match value {
                Json::String(s) => s,
                other => other.to_string(),
            });
        } else {
            self.fields.insert(field.name().to_string(), value);
        }
    }
}

/// One log line (without the newline) for the given parts.
pub fn hclog_line(level: &Level, target: &str, message: &str, fields: Map<String, Json>) -> String {
    let mut obj = Map::new();
    obj.insert("@level".into(), Json::from(hclog_level(level)));
    obj.insert("@message".into(), Json::from(message));
    obj.insert(
        "@timestamp".into(),
        Json::from(hclog_timestamp(time::OffsetDateTime::now_utc())),
    );
    obj.insert("@module".into(), Json::from(MODULE));
    obj.insert("target".into(), Json::from(target));
    for (k, v) in fields {
        // Never let a field named like an hclog key replace the real one.
        let key = if k.starts_with('@') {
            format!("field{k}")
        } else {
            k
        };
        obj.insert(key, v);
    }
    Json::Object(obj).to_string()
}

impl<S, W> Layer<S> for HclogLayer<W>
where
    S: Subscriber,
    W: for<'a> MakeWriter<'a> + Send + Sync + 'static,
{
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut collector = FieldCollector::default();
        event.record(&mut collector);
        let meta = event.metadata();
        let mut line = hclog_line(
            meta.level(),
            meta.target(),
            collector.message.as_deref().unwrap_or(""),
            collector.fields,
        );
        line.push('\n');
        let mut w = self.make_writer.make_writer();
        // A log line that cannot be written has nowhere else to go.
        let _ = w.write_all(line.as_bytes());
        let _ = w.flush();
    }
}
