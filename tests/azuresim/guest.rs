//! The simulated guest cluster API through kube-rs, as the agent reaches it: the kubeconfig Secret
//! of a provisioned HcpOpenShiftCluster names the simulator's loopback HTTPS listener, its CA and
//! the cluster's own token. The APIServices list; an annotation holds one unavailable; a wrong
//! token gets 401 and a client that trusts another CA does not connect.

use super::*;
use aro_gitops::azuresim::guest_api::UNAVAILABLE_ANNOTATION;
use aro_gitops::azuresim::guest_tls;
use base64::Engine as _;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::api::ListParams;
use kube::config::{KubeConfigOptions, Kubeconfig};

/// The simulator with its guest API, on a fresh control plane.
fn env_serving_guests() -> Env {
    let dir = tempfile::tempdir().expect("tempdir");
    let cp = ControlPlane::open(Config::new(dir.path())).expect("control plane");
    let client = cp.client();
    let sim = AzureSimulator::new(client.clone(), SimConfig::instant())
        .serving_guests()
        .spawn();
    Env {
        client,
        sim,
        _cp: cp,
        _dir: dir,
    }
}

/// The kubeconfig in Secret `c1-kubeconfig`, once written.
async fn kubeconfig(client: &Client) -> Kubeconfig {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    let deadline = Instant::now() + DEADLINE;
    let secret = loop {
        if let Some(s) = secrets.get_opt("c1-kubeconfig").await.expect("get Secret") {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "the kubeconfig Secret never appeared"
        );
        tokio::time::sleep(POLL).await;
    };
    let bytes = &secret.data.as_ref().expect("data")["value"].0;
    Kubeconfig::from_yaml(std::str::from_utf8(bytes).expect("UTF-8")).expect("a kubeconfig")
}

async fn guest_client(kc: Kubeconfig) -> Client {
    let config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .expect("a config");
    Client::try_from(config).expect("a client")
}

async fn apiservices(client: Client) -> Result<Vec<APIService>, kube::Error> {
    Api::<APIService>::all(client)
        .list(&ListParams::default())
        .await
        .map(|l| l.items)
}

fn available(a: &APIService) -> bool {
    a.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c.type_ == "Available" && c.status == "True")
        })
}

#[tokio::test]
async fn the_guest_api_answers_its_kubeconfig_only() {
    let env = env_serving_guests();
    create(&env.client, RG).await;
    create(&env.client, CLUSTER).await;
    let kc = kubeconfig(&env.client).await;
    let server = kc.clusters[0]
        .cluster
        .as_ref()
        .unwrap()
        .server
        .clone()
        .unwrap();
    assert!(
        server.starts_with("https://127.0.0.1:") && server.ends_with("/clusters/default/c1"),
        "{server}"
    );

    let listed = apiservices(guest_client(kc.clone()).await)
        .await
        .expect("the guest lists its APIServices");
    assert!(
        listed
            .iter()
            .any(|a| a.metadata.name.as_deref() == Some("v1.route.openshift.io"))
    );
    assert!(listed.iter().all(available));

    // Held unavailable on demand, read at once.
    api_for(
        &env.client,
        "redhatopenshift.azure.com/v1api20240610preview",
        "HcpOpenShiftCluster",
    )
    .patch(
        "c1",
        &PatchParams::default(),
        &Patch::Merge(
            json!({"metadata": {"annotations": {UNAVAILABLE_ANNOTATION: "v1.route.openshift.io"}}}),
        ),
    )
    .await
    .expect("annotate");
    let listed = apiservices(guest_client(kc.clone()).await)
        .await
        .expect("listed");
    let unavailable: Vec<_> = listed
        .iter()
        .filter(|a| !available(a))
        .filter_map(|a| a.metadata.name.clone())
        .collect();
    assert_eq!(unavailable, ["v1.route.openshift.io"]);

    // Another token: 401.
    let mut wrong_token = kc.clone();
    wrong_token.auth_infos[0].auth_info.as_mut().unwrap().token =
        Some("sha256~not-this-one".to_string().into());
    match apiservices(guest_client(wrong_token).await).await {
        Err(kube::Error::Api(s)) => assert_eq!(s.code, 401),
        other => panic!("expected 401, got {other:?}"),
    }

    // A client that trusts another CA does not get through.
    let (other_ca, _) = guest_tls::new_ca().expect("a CA");
    let mut wrong_ca = kc.clone();
    wrong_ca.clusters[0]
        .cluster
        .as_mut()
        .unwrap()
        .certificate_authority_data =
        Some(base64::engine::general_purpose::STANDARD.encode(other_ca));
    let err = apiservices(guest_client(wrong_ca).await)
        .await
        .expect_err("an untrusted server");
    assert!(!matches!(err, kube::Error::Api(_)), "{err:?}");
}
