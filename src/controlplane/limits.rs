//! What the server refuses whatever the object says, as kube-apiserver does: deleting a namespace
//! the cluster (or the agent) cannot live without, a collection delete the resource does not
//! offer, and a request body that is too large, malformed, or never finishes arriving.

use super::error::{ApiError, Reason};
use super::objects::Target;
use super::registry::ResourceType;
use axum::body::Body;
use bytes::Bytes;
use http_body_util::BodyExt;
use std::time::Duration;

/// The namespaces kube-apiserver never lets go (its NamespaceLifecycle admission).
pub const IMMORTAL_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public"];

use crate::marks::AGENT_NAMESPACE;

/// The protected namespaces of a default [`super::Config`]: the immortal ones and the agent's.
pub fn default_protected_namespaces() -> Vec<String> {
    IMMORTAL_NAMESPACES
        .iter()
        .chain([&AGENT_NAMESPACE])
        .map(|s| s.to_string())
        .collect()
}

fn is_namespaces(rt: &ResourceType) -> bool {
    rt.group.is_empty() && rt.kind == "Namespace" && !rt.custom
}

/// Whether the storage key names a protected namespace (for deletions the server starts itself,
/// such as garbage collection by ownerReferences).
pub(super) fn is_protected_key(key: &str, protected: &[String]) -> bool {
    key.strip_prefix("/Namespace//")
        .is_some_and(|name| protected.iter().any(|p| p == name))
}

/// Deleting one object: a protected namespace is refused, dry run or not.
pub(super) fn check_delete(
    target: &Target,
    name: &str,
    protected: &[String],
) -> Result<(), ApiError> {
    if is_namespaces(&target.rt) && protected.iter().any(|p| p == name) {
        return Err(ApiError::forbidden_object(
            "",
            "namespaces",
            name,
            "this namespace may not be deleted",
        ));
    }
    Ok(())
}

/// Whether the resource offers `deletecollection` at all (discovery lists it): namespaces do not,
/// upstream.
pub(super) fn offers_delete_collection(rt: &ResourceType) -> bool {
    !is_namespaces(rt)
}

/// Whether `DELETE` on this collection path is served: not for namespaces, nor on the
/// all-namespaces path of a namespaced kind (which only lists and watches).
fn serves_delete_collection(rt: &ResourceType, namespace: Option<&str>) -> bool {
    offers_delete_collection(rt) && (namespace.is_some() || !rt.namespaced)
}

/// Deleting a collection: refused as kube-apiserver refuses a method it does not route.
pub(super) fn check_delete_collection(target: &Target) -> Result<(), ApiError> {
    if serves_delete_collection(&target.rt, target.namespace.as_deref()) {
        Ok(())
    } else {
        Err(not_routed())
    }
}

/// What kube-apiserver answers a method it has no route for.
fn not_routed() -> ApiError {
    ApiError::method_not_allowed()
}

/// A subresource (`status`, a namespace's `finalize`) is written, never deleted: a `DELETE` there
/// would otherwise reach the object itself.
pub(super) fn check_subresource_method(
    method: &http::Method,
    sub: Option<&str>,
) -> Result<(), ApiError> {
    if sub.is_some() && method == http::Method::DELETE {
        return Err(not_routed());
    }
    Ok(())
}

/// Reads a whole request body: at most `limit` bytes (413 beyond), within `timeout` (408 when the
/// client stalls), and a body the connection cannot decode (bad chunked encoding) is a 400.
pub(super) async fn read_body(
    body: Body,
    declared_len: Option<u64>,
    limit: usize,
    timeout: Duration,
) -> Result<Bytes, ApiError> {
    match tokio::time::timeout(timeout, read_limited(body, declared_len, limit)).await {
        Err(_) => Err(body_timeout(timeout)),
        Ok(read) => read,
    }
}

/// How far past the limit a refused body is still read (and dropped): a client that is still
/// sending when the server answers would otherwise see its connection reset instead of the 413,
/// so, as Go's HTTP server drains what is left of a body its handler refused, the rest is read
/// up to this much.
const DRAIN_PAST_LIMIT: u64 = 1024 * 1024;
/// How long a refused body may pause before the 413 is answered without the rest.
const DRAIN_IDLE: Duration = Duration::from_millis(200);

async fn read_limited(
    mut body: Body,
    declared_len: Option<u64>,
    limit: usize,
) -> Result<Bytes, ApiError> {
    let mut over = declared_len.is_some_and(|n| n > limit as u64);
    let mut kept = bytes::BytesMut::new();
    let mut seen: u64 = 0;
    loop {
        // Once refused, the rest is read only while it keeps coming: a client that declared a
        // body it does not send (or sends slowly) hears the 413 at once.
        let next = if over {
            match tokio::time::timeout(DRAIN_IDLE, body.frame()).await {
                Ok(next) => next,
                Err(_) => break,
            }
        } else {
            body.frame().await
        };
        let Some(frame) = next else {
            break;
        };
        let frame = match frame {
            Ok(frame) => frame,
            // The client gave up on a refused body: the answer is still the 413.
            Err(_) if over => break,
            Err(e) => return Err(unreadable_body(&e)),
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        seen += data.len() as u64;
        over |= kept.len() + data.len() > limit;
        if over {
            if seen > limit as u64 + DRAIN_PAST_LIMIT {
                break;
            }
            continue;
        }
        kept.extend_from_slice(&data);
    }
    if over {
        return Err(ApiError::too_large(limit));
    }
    Ok(kept.freeze())
}

fn body_timeout(timeout: Duration) -> ApiError {
    ApiError::new(
        408,
        Reason::Timeout,
        format!(
            "the request body did not arrive within {}",
            humantime::format_duration(timeout)
        ),
    )
}

/// A body the connection failed to decode, named by the innermost cause (hyper's own words, such
/// as "invalid chunk size: overflow"; it never quotes the body).
fn unreadable_body(e: &(dyn std::error::Error + 'static)) -> ApiError {
    let mut cause = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    ApiError::bad_request(format!("the request body could not be read: {cause}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controlplane::registry::Registry;

    #[test]
    fn protected_namespaces_cannot_be_deleted_others_can() {
        let reg = Registry::new([]);
        let protected = default_protected_namespaces();
        let ns = Target::of(&reg, "", "namespaces", None);
        for name in ["default", "kube-system", "kube-public", "aro-gitops-system"] {
            let e = check_delete(&ns, name, &protected).unwrap_err();
            assert_eq!((e.code, e.reason), (403, Reason::Forbidden));
            assert_eq!(
                e.message,
                format!("namespaces \"{name}\" is forbidden: this namespace may not be deleted")
            );
        }
        assert!(check_delete(&ns, "aro-dev", &protected).is_ok());
        assert!(check_delete(&ns, "kube-node-lease", &protected).is_ok());
        // A ConfigMap named like a protected namespace is just a ConfigMap.
        let cm = Target::of(&reg, "", "configmaps", Some("default"));
        assert!(check_delete(&cm, "default", &protected).is_ok());
        assert!(is_protected_key("/Namespace//kube-system", &protected));
        assert!(!is_protected_key(
            "/ConfigMap/default/kube-system",
            &protected
        ));
        assert!(!is_protected_key("/Namespace//aro-dev", &protected));
    }

    #[test]
    fn collection_and_subresource_deletes_are_refused_where_upstream_has_no_route() {
        let reg = Registry::new([]);
        let e = check_delete_collection(&Target::of(&reg, "", "namespaces", None)).unwrap_err();
        assert_eq!((e.code, e.reason), (405, Reason::MethodNotAllowed));
        assert!(check_delete_collection(&Target::of(&reg, "", "configmaps", None)).is_err());
        assert!(check_delete_collection(&Target::of(&reg, "", "configmaps", Some("x"))).is_ok());
        let crds = Target::of(
            &reg,
            "apiextensions.k8s.io",
            "customresourcedefinitions",
            None,
        );
        assert!(check_delete_collection(&crds).is_ok());
    }

    fn chunks(parts: Vec<Result<&'static [u8], std::io::Error>>) -> Body {
        let frames = parts
            .into_iter()
            .map(|p| p.map(|b| hyper::body::Frame::data(Bytes::from_static(b))));
        Body::new(http_body_util::StreamBody::new(futures::stream::iter(
            frames,
        )))
    }

    #[tokio::test]
    async fn bodies_are_bounded_in_size_and_time_and_decoding_errors_are_bad_requests() {
        let t = Duration::from_secs(5);
        let ok = read_body(chunks(vec![Ok(b"{}"), Ok(b" ")]), None, 16, t).await;
        assert_eq!(ok.unwrap(), Bytes::from_static(b"{} "));

        let e = read_body(Body::from("x".repeat(17)), None, 16, t)
            .await
            .unwrap_err();
        assert_eq!(e.code, 413);
        let e = read_body(Body::empty(), Some(17), 16, t).await.unwrap_err();
        assert_eq!(
            e.code, 413,
            "a declared length over the limit is refused unread"
        );

        let broken = std::io::Error::new(std::io::ErrorKind::InvalidInput, "invalid chunk size");
        let e = read_body(chunks(vec![Ok(b"{"), Err(broken)]), None, 16, t)
            .await
            .unwrap_err();
        assert_eq!((e.code, e.reason), (400, Reason::BadRequest));
        assert!(e.message.ends_with("invalid chunk size"), "{}", e.message);

        let stalled = Body::new(http_body_util::StreamBody::new(futures::stream::pending::<
            Result<hyper::body::Frame<Bytes>, std::io::Error>,
        >()));
        let e = read_body(stalled, None, 16, Duration::from_millis(50))
            .await
            .unwrap_err();
        assert_eq!((e.code, e.reason), (408, Reason::Timeout));
        assert_eq!(e.message, "the request body did not arrive within 50ms");
    }
}
