//! `certificates.k8s.io/v1beta1` CertificateSigningRequest -> `certificates.k8s.io/v1`.

use serde_json::{Map, Value, json};

use super::{ConvertError, Cx};

/// v1 requires `signerName` and `usages`, which v1beta1 defaulted. The usages default
/// is fixed (digital signature, key encipherment) and is written. The signer default
/// depended on the request's contents (kubelet client or serving certificate, else the
/// `legacy-unknown` signer v1 no longer accepts), so a missing signer is an error the
/// author has to resolve.
pub(super) fn certificate_signing_request(
    cx: &mut Cx,
    root: &mut Map<String, Value>,
) -> Result<(), ConvertError> {
    let spec = cx.spec(root)?;
    match cx.string(spec, "signerName", "spec.signerName")? {
        None => {
            return Err(cx.err(
                "spec.signerName is not set: certificates.k8s.io/v1 requires it and the \
                 v1beta1 default depended on the request; set it in the template",
            ));
        }
        Some("kubernetes.io/legacy-unknown") => {
            return Err(cx.err(
                "spec.signerName kubernetes.io/legacy-unknown cannot be requested through \
                 certificates.k8s.io/v1",
            ));
        }
        Some(_) => {}
    }
    if super::set_default(
        spec,
        "usages",
        json!(["digital signature", "key encipherment"]),
    ) {
        cx.note(
            "spec.usages was not set; wrote the certificates.k8s.io/v1beta1 default \
             [digital signature, key encipherment], which v1 requires explicitly",
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::convert;
    use serde_json::json;

    // CertificateSigningRequest certificates.k8s.io/v1beta1: kubernetes.io/docs/reference/generated/kubernetes-api/v1.21/#certificatesigningrequestspec-v1beta1-certificates-k8s-io;
    // v1: kubernetes.io/docs/reference/generated/kubernetes-api/v1.36/#certificatesigningrequestspec-v1-certificates-k8s-io
    #[test]
    fn csr_gets_default_usages_and_needs_a_signer() {
        let mut csr = json!({
            "apiVersion": "certificates.k8s.io/v1beta1",
            "kind": "CertificateSigningRequest",
            "metadata": {"name": "kafka-broker-0"},
            "spec": {"request": "LS0tLS1CRUdJTi...", "signerName": "kubernetes.io/kubelet-serving"}
        });
        let out = convert(&csr, "certificates.k8s.io/v1").unwrap();
        assert_eq!(
            out.object["spec"]["usages"],
            json!(["digital signature", "key encipherment"])
        );
        assert_eq!(out.notes.len(), 1);

        csr["spec"]
            .as_object_mut()
            .map(|spec| spec.remove("signerName"));
        let err = convert(&csr, "certificates.k8s.io/v1").unwrap_err();
        assert!(err.message.contains("signerName"), "{err}");
    }
}
