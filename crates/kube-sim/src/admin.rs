//! The simulator's own endpoint under `/_sim/`: faults, exec files, container exits,
//! settings.

use std::time::Duration;

use hyper::{Method, StatusCode};
use serde_json::{Value, json};

use crate::api_error::{ApiError, ApiResult};
use crate::auth::{ExpiringTokens, UserToken};
use crate::containers::ContainerExit;
use crate::exec::ExecFile;
use crate::faults::FaultRule;
use crate::http::{Resp, json_response};
use crate::shared::Shared;

fn parse_list<T: serde::de::DeserializeOwned>(body: &[u8]) -> ApiResult<Vec<T>> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("invalid JSON: {e}")))?;
    let items = match v {
        Value::Array(a) => a,
        other => vec![other],
    };
    items
        .into_iter()
        .map(|i| {
            serde_json::from_value(i)
                .map_err(|e| ApiError::bad_request(format!("invalid entry: {e}")))
        })
        .collect()
}

pub fn handle(shared: &Shared, method: &Method, rest: &[String], body: &[u8]) -> ApiResult<Resp> {
    let path: Vec<&str> = rest.iter().map(String::as_str).collect();
    let ok = || Ok(json_response(StatusCode::OK, &json!({"status": "ok"})));
    match (method, path.as_slice()) {
        (&Method::GET, ["faults"]) => Ok(json_response(StatusCode::OK, &json!(*shared.faults()))),
        (&Method::POST, ["faults"]) => {
            let rules: Vec<FaultRule> = parse_list(body)?;
            shared.faults().extend(rules);
            ok()
        }
        (&Method::DELETE, ["faults"]) => {
            shared.faults().clear();
            ok()
        }
        (&Method::GET, ["stats"]) => Ok(json_response(StatusCode::OK, &json!(*shared.stats()))),
        (&Method::GET, ["stats", "requests"]) => {
            Ok(json_response(StatusCode::OK, &json!(*shared.counts())))
        }
        (&Method::DELETE, ["stats"]) => {
            *shared.stats() = Default::default();
            shared.counts().clear();
            ok()
        }
        (&Method::GET, ["exec-files"]) => {
            Ok(json_response(StatusCode::OK, &json!(*shared.exec_files())))
        }
        (&Method::POST, ["exec-files"]) => {
            let files: Vec<ExecFile> = parse_list(body)?;
            shared.exec_files().extend(files);
            ok()
        }
        (&Method::DELETE, ["exec-files"]) => {
            shared.exec_files().clear();
            ok()
        }
        (&Method::GET, ["container-exits"]) => Ok(json_response(
            StatusCode::OK,
            &json!(*shared.container_exits()),
        )),
        (&Method::POST, ["container-exits"]) => {
            let exits: Vec<ContainerExit> = parse_list(body)?;
            shared.container_exits().extend(exits);
            ok()
        }
        (&Method::DELETE, ["container-exits"]) => {
            shared.container_exits().clear();
            ok()
        }
        (&Method::GET, ["settings"]) => {
            let ms = shared.settings().ready_delay.as_millis() as u64;
            Ok(json_response(StatusCode::OK, &json!({"readyDelayMs": ms})))
        }
        (&Method::PUT | &Method::POST, ["settings"]) => {
            let v: Value = serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("invalid JSON: {e}")))?;
            if let Some(ms) = v["readyDelayMs"].as_u64() {
                shared.settings().ready_delay = Duration::from_millis(ms);
            }
            ok()
        }
        (&Method::POST, ["tokens"]) => {
            let tokens: Vec<UserToken> = parse_list(body)?;
            shared.tokens().users.extend(tokens);
            ok()
        }
        (&Method::POST, ["expiring-tokens"]) => {
            let families: Vec<ExpiringTokens> = parse_list(body)?;
            shared.tokens().families.extend(families);
            ok()
        }
        (&Method::GET, ["forbidden"]) => Ok(json_response(
            StatusCode::OK,
            &json!({
                "forbidden": *shared.forbidden(),
                "expiredTokens": shared.tokens().expired_refusals,
                "revokedTokens": shared.tokens().revoked_refusals,
            }),
        )),
        (&Method::POST, ["compact"]) => {
            shared.store().compact();
            ok()
        }
        _ => Err(ApiError::new(
            404,
            "NotFound",
            format!("no admin endpoint {method} /_sim/{}", rest.join("/")),
        )),
    }
}
