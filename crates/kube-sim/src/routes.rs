//! URL paths of the Kubernetes API mapped to what they address.

use percent_encoding::percent_decode_str;

#[derive(Debug, Clone, PartialEq)]
pub struct ResPath {
    pub group: String,
    pub version: String,
    pub namespace: Option<String>,
    pub plural: String,
    pub name: Option<String>,
    pub sub: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Route {
    Version,
    Health,
    Api,
    CoreVersion(String),
    Apis,
    Group(String),
    GroupVersion(String, String),
    Resource(ResPath),
    Admin(Vec<String>),
    Unknown,
}

pub fn parse(path: &str) -> Route {
    let segs: Vec<String> = path
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .map(|s| percent_decode_str(s).decode_utf8_lossy().into_owned())
        .collect();
    let s: Vec<&str> = segs.iter().map(String::as_str).collect();
    match s.as_slice() {
        ["version"] => Route::Version,
        ["healthz" | "livez" | "readyz"] => Route::Health,
        ["_sim", rest @ ..] => Route::Admin(rest.iter().map(|s| s.to_string()).collect()),
        ["api"] => Route::Api,
        ["api", v] => Route::CoreVersion(v.to_string()),
        ["api", v, rest @ ..] => resource("", v, rest),
        ["apis"] => Route::Apis,
        ["apis", g] => Route::Group(g.to_string()),
        ["apis", g, v] => Route::GroupVersion(g.to_string(), v.to_string()),
        ["apis", g, v, rest @ ..] => resource(g, v, rest),
        _ => Route::Unknown,
    }
}

fn resource(group: &str, version: &str, rest: &[&str]) -> Route {
    let mk = |ns: Option<&str>, plural: &str, name: Option<&str>, sub: Option<&str>| {
        Route::Resource(ResPath {
            group: group.to_string(),
            version: version.to_string(),
            namespace: ns.map(str::to_string),
            plural: plural.to_string(),
            name: name.map(str::to_string),
            sub: sub.map(str::to_string),
        })
    };
    match rest {
        [p] => mk(None, p, None, None),
        [p, n] => mk(None, p, Some(n), None),
        ["namespaces", ns, sub @ ("status" | "finalize")] => {
            mk(None, "namespaces", Some(ns), Some(sub))
        }
        ["namespaces", ns, p] => mk(Some(ns), p, None, None),
        ["namespaces", ns, p, n] => mk(Some(ns), p, Some(n), None),
        ["namespaces", ns, p, n, s] => mk(Some(ns), p, Some(n), Some(s)),
        [p, n, s] => mk(None, p, Some(n), Some(s)),
        _ => Route::Unknown,
    }
}

/// Query parameters in order (repeated keys such as `command` kept).
#[derive(Debug, Clone, Default)]
pub struct Query(Vec<(String, String)>);

impl Query {
    pub fn parse(q: Option<&str>) -> Query {
        let decode = |s: &str| {
            percent_decode_str(&s.replace('+', " "))
                .decode_utf8_lossy()
                .into_owned()
        };
        Query(
            q.unwrap_or_default()
                .split('&')
                .filter(|p| !p.is_empty())
                .map(|p| match p.split_once('=') {
                    Some((k, v)) => (decode(k), decode(v)),
                    None => (decode(p), String::new()),
                })
                .collect(),
        )
    }

    pub fn get(&self, k: &str) -> Option<&str> {
        self.0
            .iter()
            .rev()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
    }

    pub fn all(&self, k: &str) -> Vec<String> {
        self.0
            .iter()
            .filter(|(n, _)| n == k)
            .map(|(_, v)| v.clone())
            .collect()
    }

    pub fn flag(&self, k: &str) -> bool {
        matches!(self.get(k), Some("true" | "1" | ""))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaced_and_cluster_paths() {
        assert_eq!(
            parse("/apis/apps/v1/namespaces/ns/deployments/web/status"),
            Route::Resource(ResPath {
                group: "apps".into(),
                version: "v1".into(),
                namespace: Some("ns".into()),
                plural: "deployments".into(),
                name: Some("web".into()),
                sub: Some("status".into()),
            })
        );
        assert!(
            matches!(parse("/api/v1/namespaces/ns"), Route::Resource(ResPath { name: Some(n), namespace: None, .. }) if n == "ns")
        );
        assert!(matches!(
            parse("/api/v1/namespaces/ns/configmaps"),
            Route::Resource(ResPath {
                name: None,
                namespace: Some(_),
                ..
            })
        ));
        let q = Query::parse(Some("command=cat&command=%2Fetc%2Fx&labelSelector=a%3Db"));
        assert_eq!(q.all("command"), vec!["cat", "/etc/x"]);
        assert_eq!(q.get("labelSelector"), Some("a=b"));
    }
}
