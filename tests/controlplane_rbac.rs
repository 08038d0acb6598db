//! RBAC on the local control plane as a ServiceAccount sees it (impersonation headers), beside
//! the admin, which stays all-powerful: the fidelity corpus (`rbac-*`) compares the answers with
//! kube-apiserver's; these check the decisions that matter to the agent's least-privilege role.

use serde_json::{Value, json};

const SA: &str = "system:serviceaccount:default:bot";

fn open() -> (tempfile::TempDir, aro_gitops::controlplane::ControlPlane) {
    let dir = tempfile::tempdir().unwrap();
    let mut config = aro_gitops::controlplane::Config::new(dir.path());
    config.preload_crds = false;
    let cp = aro_gitops::controlplane::ControlPlane::open(config).unwrap();
    (dir, cp)
}

/// Sends one request (as `user` when given) and answers its status and JSON body.
async fn send(
    client: &kube::Client,
    method: &str,
    path: &str,
    content_type: &str,
    body: Option<Value>,
    user: Option<&str>,
) -> (u16, Value) {
    let mut req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", content_type);
    if let Some(user) = user {
        req = req.header("Impersonate-User", user);
    }
    let body = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
    let resp = client
        .send(req.body(body.into()).unwrap())
        .await
        .expect("an answer");
    let status = resp.status().as_u16();
    let bytes = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .unwrap()
        .to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

async fn grant(client: &kube::Client, verbs: &[&str]) {
    let rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/default";
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "r"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": verbs}]});
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "rb"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
        "subjects": [{"kind": "ServiceAccount", "name": "bot", "namespace": "default"}]});
    for (path, body) in [
        (format!("{rbac}/roles"), role),
        (format!("{rbac}/rolebindings"), binding),
    ] {
        let (status, _) = send(client, "POST", &path, "application/json", Some(body), None).await;
        assert_eq!(status, 201);
    }
}

#[tokio::test]
async fn an_apply_that_creates_needs_create_and_one_that_updates_needs_patch() {
    let (_dir, cp) = open();
    let client = cp.client();
    grant(&client, &["get", "patch"]).await;
    let path = "/api/v1/namespaces/default/configmaps/a?fieldManager=bot";
    let apply = "application/apply-patch+yaml";
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"x": "1"}});
    let (status, body) = send(&client, "PATCH", path, apply, Some(cm.clone()), Some(SA)).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(
        body["message"],
        format!(
            "configmaps \"a\" is forbidden: User \"{SA}\" cannot create resource \"configmaps\" in API group \"\" in the namespace \"default\""
        )
    );
    // Nothing was created: the admin (no impersonation) finds no object.
    let get = "/api/v1/namespaces/default/configmaps/a";
    let (status, _) = send(&client, "GET", get, "application/json", None, None).await;
    assert_eq!(status, 404);
    // Once the admin created it, the same apply is a patch, which the ServiceAccount holds.
    let (status, _) = send(&client, "PATCH", path, apply, Some(cm.clone()), None).await;
    assert_eq!(status, 201);
    let (status, body) = send(&client, "PATCH", path, apply, Some(cm), Some(SA)).await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn the_admin_is_unaffected_and_a_service_account_reads_discovery_only() {
    let (_dir, cp) = open();
    let client = cp.client();
    let secrets = "/api/v1/namespaces/default/secrets";
    let (status, _) = send(&client, "GET", secrets, "application/json", None, None).await;
    assert_eq!(status, 200);
    let (status, body) = send(&client, "GET", secrets, "application/json", None, Some(SA)).await;
    assert_eq!(status, 403);
    assert_eq!(body["details"], json!({"kind": "secrets"}));
    let (status, _) = send(&client, "GET", "/apis", "application/json", None, Some(SA)).await;
    assert_eq!(status, 200);
    // The bootstrap ClusterRoles are there, cluster-admin granting everything.
    let view = "/apis/rbac.authorization.k8s.io/v1/clusterroles/cluster-admin";
    let (status, body) = send(&client, "GET", view, "application/json", None, None).await;
    assert_eq!(status, 200);
    assert_eq!(body["rules"][0]["verbs"], json!(["*"]));
}
