//! The real kubectl drives the local control plane (`aro-gitops control-plane serve`) and
//! kube-apiserver v1.37 (`common::real_cluster`) alike, as a user drives a cluster: server-side
//! apply (with field-manager conflicts), get, diff, patch, delete, wait, watch, finalizers, garbage
//! collection, namespace deletion, dry runs, generation, CRD structural schemas, and bad input over
//! raw HTTP.
//!
//! Every check is a function of a [`Target`] (`servers.rs`): a kubectl defaulting to the check's
//! own namespace, a raw-HTTP address, and how long a controller may take. Each check runs
//! - as its own test on its own fresh local server (`local::NAME`), as before; and
//! - in `every_check_on_both_servers`, once on one local server and once on one kube-apiserver
//!   shared by all checks, each in its own namespace; it prints one line per check with both
//!   results and the figure `clients (kubectl): N of M checks pass on both servers`, and fails on
//!   a failure that `controlplane_kubectl/known-differences.yaml` does not declare, or a declared
//!   one that no longer happens (see docs/clients.md).
//!
//! Local only, as their own tests: `raw_http::kill_9_loses_no_acknowledged_write` (kill -9 and the
//! state directory are the local server's own).
//!
//! Modules: `apply` (apply/get/diff/patch/delete), `lifecycle` (wait, watch, deletion, dry run,
//! generation), `schema` (CRD structural schemas), `raw_http` (durability and bad input),
//! `servers` (the two servers), `both` (the run on both).

#[path = "controlplane_kubectl/apply.rs"]
mod apply;
#[path = "controlplane_kubectl/both.rs"]
mod both;
mod common;
#[path = "controlplane_kubectl/lifecycle.rs"]
mod lifecycle;
#[path = "controlplane_kubectl/raw_http.rs"]
mod raw_http;
#[path = "clients/report.rs"]
mod report;
#[path = "controlplane_kubectl/schema.rs"]
mod schema;
#[path = "controlplane_kubectl/servers.rs"]
mod servers;

use base64::Engine;
use common::kubectl::Kubectl;
use serde_json::{Value, json};
use servers::Target;
use std::time::Duration;

const T: Duration = Duration::from_secs(20);

/// A small CRD of our own: namespaced, status subresource, a printer column for `kubectl get`.
const GIZMO_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gizmos.kubectl.example.com
spec:
  group: kubectl.example.com
  scope: Namespaced
  names:
    kind: Gizmo
    listKind: GizmoList
    plural: gizmos
    singular: gizmo
  versions:
    - name: v1
      served: true
      storage: true
      subresources:
        status: {}
      additionalPrinterColumns:
        - name: Size
          type: integer
          jsonPath: .spec.size
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                size:
                  type: integer
                color:
                  type: string
            status:
              type: object
              properties:
                conditions:
                  type: array
                  x-kubernetes-list-type: map
                  x-kubernetes-list-map-keys: [type]
                  items:
                    type: object
                    required: [type, status]
                    properties:
                      type:
                        type: string
                      status:
                        type: string
"#;

/// Installs [`GIZMO_CRD`] (a no-op where it is) and waits until gizmos are served.
fn with_gizmos(t: &Target) {
    t.install_crd(
        GIZMO_CRD,
        "gizmos.kubectl.example.com",
        &format!("/apis/kubectl.example.com/v1/namespaces/{}/gizmos", t.ns),
    );
}

fn gizmo(name: &str, namespace: &str, size: i64, color: Option<&str>) -> String {
    let color = color.map(|c| format!("\n  color: {c}")).unwrap_or_default();
    format!(
        "apiVersion: kubectl.example.com/v1\nkind: Gizmo\nmetadata:\n  name: {name}\n  namespace: {namespace}\nspec:\n  size: {size}{color}\n"
    )
}

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

fn apply(k: &Kubectl, manager: &str, manifest: &str) -> String {
    k.ok_stdin(
        &[
            "apply",
            "--server-side",
            "--field-manager",
            manager,
            "-f",
            "-",
        ],
        manifest,
    )
}

/// `kubectl create -f -`.
fn create(k: &Kubectl, manifest: &str) -> String {
    k.ok_stdin(&["create", "-f", "-"], manifest)
}

fn secret(name: &str, namespace: &str, data: &[(&str, &str)]) -> String {
    let data: String = data
        .iter()
        .map(|(k, v)| format!("\n  {k}: {}", b64(v)))
        .collect();
    format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n  namespace: {namespace}\ndata:{data}\n"
    )
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("{pointer} missing in {v}"))
}

/// Declares the checks: each becomes the test `local::NAME` on its own local server, and an entry
/// of [`CHECKS`] for the run on both servers.
macro_rules! checks {
    ($($module:ident::$name:ident),* $(,)?) => {
        /// Every check, by name, in the order the run on both servers takes them.
        const CHECKS: &[(&str, fn(&Target))] = &[$((stringify!($name), $module::$name)),*];

        /// Each check on its own fresh local server.
        mod local {
            $(
                #[test]
                fn $name() {
                    super::servers::on_local_server(stringify!($name), super::$module::$name);
                }
            )*
        }
    };
}

checks! {
    apply::apply_server_side_creates_updates_and_drops_fields_no_longer_applied,
    apply::apply_server_side_conflict_between_managers_and_force_conflicts,
    apply::get_prints_yaml_and_json_for_custom_preloaded_kinds_and_secrets,
    apply::diff_server_side_is_clean_after_apply_and_shows_a_change,
    apply::patch_merge_and_json_including_a_failing_test_op,
    apply::delete_returns_and_the_object_is_gone,
    apply::apply_server_side_of_a_v1_list_applies_each_item,
    lifecycle::wait_for_condition_ready_set_by_another_client,
    lifecycle::get_watch_shows_a_change_made_by_another_kubectl,
    lifecycle::finalizers_hold_a_delete_until_removed,
    lifecycle::owner_deletion_cascades_to_dependents,
    lifecycle::namespace_deletion_removes_its_objects,
    lifecycle::a_terminating_namespace_refuses_new_objects,
    lifecycle::dry_run_server_stores_nothing,
    lifecycle::status_writes_do_not_bump_generation_spec_writes_do,
    schema::violations_are_refused_with_422_naming_each_field,
    schema::unknown_fields_warn_by_default_are_refused_when_strict_and_pruned_when_ignored,
    schema::updates_patches_applies_and_status_writes_are_validated,
    schema::kubectl_refuses_unknown_fields_as_on_a_cluster_unless_told_not_to_validate,
    raw_http::bad_input_is_refused_with_a_status_and_the_store_stays_fine,
}
