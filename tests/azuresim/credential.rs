//! ASO's per-resource credential on the simulator: a resource whose
//! `serviceoperator.azure.com/credential-from` Secret is missing, in another namespace or
//! incomplete gets `Ready` False `SecretNotFound` and is not provisioned; once the Secret is there
//! (complete), it is.

use super::*;

fn annotated(name: &str, credential: &str) -> String {
    format!(
        "
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: {name}
  namespace: default
  annotations: {{serviceoperator.azure.com/credential-from: '{credential}'}}
spec: {{location: eastus}}
"
    )
}

fn refused(obj: &Value) -> bool {
    let c = ready(obj);
    c["status"] == "False" && c["reason"] == "SecretNotFound"
}

async fn put_secret(client: &Client, name: &str, keys: &[&str]) {
    let data: serde_json::Map<String, Value> = keys
        .iter()
        .map(|k| (k.to_string(), json!("ZmFrZQ==")))
        .collect();
    let body = json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": name, "namespace": "default"}, "data": data});
    let api: Api<Secret> = Api::namespaced(client.clone(), "default");
    api.patch(
        name,
        &PatchParams::apply("test").force(),
        &Patch::Apply(&body),
    )
    .await
    .expect("apply the Secret");
}

const ALL_KEYS: [&str; 4] = [
    "AZURE_SUBSCRIPTION_ID",
    "AZURE_TENANT_ID",
    "AZURE_CLIENT_ID",
    "AZURE_CLIENT_SECRET",
];

#[tokio::test]
async fn a_missing_credential_secret_stops_the_resource_until_it_exists() {
    let env = env();
    let rg = create(&env.client, &annotated("rg1", "rg1-credential")).await;
    let api = api_of(&env.client, &rg);
    let seen = wait_for(&api, "rg1", "SecretNotFound", refused).await;
    let c = ready(&seen);
    assert_eq!(c["severity"], "Warning", "{c}");
    assert!(
        c["message"]
            .as_str()
            .unwrap()
            .contains("default/rg1-credential"),
        "{c}"
    );
    assert!(
        seen.pointer("/status/id").is_none(),
        "not provisioned: {seen:#}"
    );
    put_secret(&env.client, "rg1-credential", &ALL_KEYS).await;
    let rg = wait_for(&api, "rg1", "Ready", is_ready).await;
    assert_eq!(rg["status"]["id"], RG_ID);
}

#[tokio::test]
async fn an_incomplete_or_foreign_credential_secret_is_refused() {
    let env = env();
    put_secret(&env.client, "partial", &ALL_KEYS[1..]).await;
    let rg = create(&env.client, &annotated("rg1", "partial")).await;
    let api = api_of(&env.client, &rg);
    let seen = wait_for(&api, "rg1", "SecretNotFound", refused).await;
    let message = ready(&seen)["message"].as_str().unwrap().to_string();
    assert!(message.contains("AZURE_SUBSCRIPTION_ID"), "{message}");
    assert!(!message.contains("ZmFrZQ=="), "{message}");
    put_secret(&env.client, "whole", &ALL_KEYS).await;
    create(&env.client, &annotated("rg2", "other/whole")).await;
    let seen = wait_for(&api, "rg2", "SecretNotFound", refused).await;
    assert!(
        ready(&seen)["message"]
            .as_str()
            .unwrap()
            .contains("cannot contain '/'")
    );
    // Without the annotation, as before.
    create(&env.client, RG.replace("rg1", "rg3").as_str()).await;
    wait_for(&api, "rg3", "Ready", is_ready).await;
}
