#!/usr/bin/env python3
"""Drives a Kubernetes API server with the official Kubernetes Python client: the local control
plane (`aro-gitops control-plane serve`) or kube-apiserver, alike.

Usage: check.py --kubeconfig PATH

Each check prints one line, `ok <name>` or `FAIL <name>: <why>`; the exit code is 1 when any
check failed (tests/controlplane_python.rs runs this on both servers and compares). Each check
runs in its own namespace, `py-<name>`, created before it, and sets up what it needs; a failed
check does not stop the others. Nothing assumes one server: waits (CRD establishment, namespace
deletion by the namespace controller) poll with a deadline.
"""

import argparse
import datetime
import sys
import time
import traceback

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException
from kubernetes.dynamic import DynamicClient

GROUP = "python.example.com"
# Namespace deletion on kube-apiserver waits for the namespace controller.
DEADLINE = 60.0


def expect(cond, why):
    if not cond:
        raise AssertionError(why)


def expect_status(code, fn, *args, **kwargs):
    """Calls fn and expects an ApiException with this HTTP status."""
    try:
        fn(*args, **kwargs)
    except ApiException as e:
        expect(e.status == code, f"expected HTTP {code}, got {e.status}: {e.body}")
        return e
    raise AssertionError(f"expected HTTP {code}, the call succeeded")


def poll(what, fn):
    """Polls fn until it returns a true value or the deadline passes."""
    end = time.monotonic() + DEADLINE
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {DEADLINE:.0f}s waiting for {what}")
        time.sleep(0.1)


def meta(name, labels=None, namespace=None):
    return client.V1ObjectMeta(name=name, namespace=namespace, labels=labels)


def widget_crd(plural, kind):
    """A namespaced CRD of GROUP at v1 with a spec (size, color) and a status subresource."""
    schema = client.V1JSONSchemaProps(
        type="object",
        properties={
            "spec": client.V1JSONSchemaProps(
                type="object",
                properties={"size": client.V1JSONSchemaProps(type="integer"),
                            "color": client.V1JSONSchemaProps(type="string")},
            ),
            "status": client.V1JSONSchemaProps(
                type="object", properties={"phase": client.V1JSONSchemaProps(type="string")}
            ),
        },
    )
    return client.V1CustomResourceDefinition(
        metadata=meta(f"{plural}.{GROUP}"),
        spec=client.V1CustomResourceDefinitionSpec(
            group=GROUP,
            scope="Namespaced",
            names=client.V1CustomResourceDefinitionNames(
                kind=kind, list_kind=kind + "List", plural=plural, singular=kind.lower()),
            versions=[client.V1CustomResourceDefinitionVersion(
                name="v1", served=True, storage=True,
                schema=client.V1CustomResourceValidation(open_apiv3_schema=schema),
                subresources=client.V1CustomResourceSubresources(status={}),
            )],
        ),
    )


class Checks:
    def __init__(self, api_client):
        self.api = api_client
        self.core = client.CoreV1Api(api_client)
        self.apps = client.AppsV1Api(api_client)
        self.custom = client.CustomObjectsApi(api_client)
        self.coord = client.CoordinationV1Api(api_client)
        self.ext = client.ApiextensionsV1Api(api_client)
        # The namespace of the check being run; main() creates it first.
        self.ns = None

    # -- discovery and namespaces ---------------------------------------------------------------

    def check_discovery(self):
        version = client.VersionApi(self.api).get_code()
        expect(version.major and version.git_version, f"version without major/gitVersion: {version}")
        groups = {g.name for g in client.ApisApi(self.api).get_api_versions().groups}
        for g in ["apps", "coordination.k8s.io", "apiextensions.k8s.io"]:
            expect(g in groups, f"group {g} not discovered: {sorted(groups)}")
        names = {r.name for r in self.core.get_api_resources().resources}
        expect({"configmaps", "namespaces", "namespaces/status"} <= names, f"core resources: {sorted(names)}")

    def check_namespace_create(self):
        # Typed bodies from the generated models carry no kind/apiVersion: the server takes them
        # from the URL, as kube-apiserver does.
        name = self.ns + "-made"
        ns = self.core.create_namespace(client.V1Namespace(metadata=meta(name)))
        expect(ns.kind == "Namespace" and ns.api_version == "v1", f"kind/apiVersion: {ns.kind} {ns.api_version}")
        expect(ns.status.phase == "Active", f"phase {ns.status.phase}")
        labels = ns.metadata.labels or {}
        expect(labels.get("kubernetes.io/metadata.name") == name, f"labels {labels}")
        expect_status(409, self.core.create_namespace, client.V1Namespace(metadata=meta(name)))

    # -- CRUD -----------------------------------------------------------------------------------

    def check_configmap_crud(self):
        body = client.V1ConfigMap(metadata=meta("crud", {"app": "py"}), data={"a": "1"})
        created = self.core.create_namespaced_config_map(self.ns, body)
        expect(created.metadata.uid and created.metadata.resource_version, "no uid/resourceVersion")
        expect(created.metadata.creation_timestamp is not None, "no creationTimestamp")
        # A kind without a spec has no generation.
        expect(created.metadata.generation is None, f"generation {created.metadata.generation}")
        got = self.core.read_namespaced_config_map("crud", self.ns)
        expect(got.data == {"a": "1"}, f"data {got.data}")
        got.data["b"] = "2"
        replaced = self.core.replace_namespaced_config_map("crud", self.ns, got)
        expect(replaced.data == {"a": "1", "b": "2"}, f"replaced data {replaced.data}")
        expect(
            int(replaced.metadata.resource_version) > int(created.metadata.resource_version),
            "resourceVersion did not grow",
        )
        # A replace carrying the old resourceVersion is a conflict.
        expect_status(409, self.core.replace_namespaced_config_map, "crud", self.ns, got)
        expect_status(409, self.core.create_namespaced_config_map, self.ns, body)
        expect_status(404, self.core.read_namespaced_config_map, "absent", self.ns)
        # Deleting an object no finalizer holds answers a Status (this client returns it as a dict).
        deleted = self.core.delete_namespaced_config_map("crud", self.ns)
        expect(deleted.get("kind") == "Status" and deleted.get("status") == "Success",
               f"delete answered {deleted}")
        expect_status(404, self.core.read_namespaced_config_map, "crud", self.ns)

    def check_explicit_kind_mismatch_refused(self):
        body = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "wrong"}}
        e = expect_status(400, self.core.create_namespaced_config_map, self.ns, body)
        expect("Secret" in (e.body or ""), f"the refusal should name the kind: {e.body}")

    def check_dry_run(self):
        body = client.V1ConfigMap(metadata=meta("dry"), data={"a": "1"})
        out = self.core.create_namespaced_config_map(self.ns, body, dry_run="All")
        expect(out.metadata.name == "dry", f"dry-run answer {out.metadata}")
        expect_status(404, self.core.read_namespaced_config_map, "dry", self.ns)

    # -- pagination and selectors ---------------------------------------------------------------

    def _seed_pages(self):
        """Seven ConfigMaps page-0..6, labelled paged=yes and tier front (even) or back (odd)."""
        for i in range(7):
            tier = "front" if i % 2 == 0 else "back"
            self.core.create_namespaced_config_map(
                self.ns, client.V1ConfigMap(metadata=meta(f"page-{i}", {"paged": "yes", "tier": tier}), data={"i": str(i)})
            )

    def check_pagination(self):
        self._seed_pages()
        names, token, pages = [], None, 0
        while True:
            page = self.core.list_namespaced_config_map(self.ns, label_selector="paged=yes", limit=3, _continue=token)
            pages += 1
            expect(len(page.items) <= 3, f"page of {len(page.items)} items")
            names += [i.metadata.name for i in page.items]
            token = page.metadata._continue
            if not token:
                break
            expect(pages < 10, "pagination does not end")
        expect(pages == 3, f"{pages} pages for 7 items at limit 3")
        expect(names == [f"page-{i}" for i in range(7)], f"names {names}")
        expect_status(400, self.core.list_namespaced_config_map, self.ns, _continue="not-a-token")

    def check_selectors(self):
        self._seed_pages()
        front = self.core.list_namespaced_config_map(self.ns, label_selector="paged=yes,tier in (front)")
        expect([i.metadata.name for i in front.items] == ["page-0", "page-2", "page-4", "page-6"],
               f"set selector: {[i.metadata.name for i in front.items]}")
        one = self.core.list_namespaced_config_map(self.ns, field_selector="metadata.name=page-3")
        expect([i.metadata.name for i in one.items] == ["page-3"], f"field selector: {one.items}")
        # Across namespaces: the other checks' pages are there too; this one's three are among them.
        across = self.core.list_config_map_for_all_namespaces(label_selector="tier=back,paged")
        mine = sorted(i.metadata.name for i in across.items if i.metadata.namespace == self.ns)
        expect(mine == ["page-1", "page-3", "page-5"], f"all-namespaces list: {mine}")
        expect(all(i.metadata.labels.get("tier") == "back" for i in across.items), "a selector let others through")
        expect_status(400, self.core.list_namespaced_config_map, self.ns, field_selector="data.i=1")

    def check_delete_collection(self):
        self._seed_pages()
        self.core.delete_collection_namespaced_config_map(self.ns, label_selector="tier=back")
        left = self.core.list_namespaced_config_map(self.ns, label_selector="paged=yes")
        expect(len(left.items) == 4, f"{len(left.items)} left after deleting tier=back")

    # -- watch ----------------------------------------------------------------------------------

    def check_watch(self):
        start = self.core.list_namespaced_config_map(self.ns).metadata.resource_version
        cm = self.core.create_namespaced_config_map(self.ns, client.V1ConfigMap(metadata=meta("watched"), data={"v": "1"}))
        self.core.patch_namespaced_config_map(
            "watched", self.ns, {"data": {"v": "2"}}, _content_type="application/merge-patch+json"
        )
        self.core.delete_namespaced_config_map("watched", self.ns)
        seen = []
        w = watch.Watch()
        for event in w.stream(self.core.list_namespaced_config_map, self.ns, resource_version=start, timeout_seconds=20):
            obj = event["object"]
            if obj.metadata.name == "watched":
                seen.append((event["type"], obj.data.get("v") if obj.data else None))
            if len(seen) == 3:
                w.stop()
        expect(seen == [("ADDED", "1"), ("MODIFIED", "2"), ("DELETED", "2")], f"events {seen}")
        expect(cm.metadata.uid, "no uid")

    def check_watch_initial_state_and_timeout(self):
        self._seed_pages()
        for i in (1, 3, 5):
            self.core.delete_namespaced_config_map(f"page-{i}", self.ns)
        names = []
        began = time.monotonic()
        # No resourceVersion: the current objects come as ADDED; the stream ends at the timeout.
        for event in watch.Watch().stream(self.core.list_namespaced_config_map, self.ns,
                                          label_selector="paged=yes", timeout_seconds=1):
            expect(event["type"] == "ADDED", f"event {event['type']}")
            names.append(event["object"].metadata.name)
        expect(sorted(names) == ["page-0", "page-2", "page-4", "page-6"], f"initial events {names}")
        expect(time.monotonic() - began < DEADLINE, "the watch outlived its timeout")

    # -- patches and server-side apply ----------------------------------------------------------

    def check_patch_types(self):
        self.core.create_namespaced_config_map(self.ns, client.V1ConfigMap(metadata=meta("patched"), data={"a": "1"}))
        merged = self.core.patch_namespaced_config_map(
            "patched", self.ns, {"data": {"b": "2", "a": None}}, _content_type="application/merge-patch+json"
        )
        expect(merged.data == {"b": "2"}, f"merge patch: {merged.data}")
        jsonp = self.core.patch_namespaced_config_map(
            "patched", self.ns, [{"op": "add", "path": "/data/c", "value": "3"}, {"op": "test", "path": "/data/b", "value": "2"}],
            _content_type="application/json-patch+json",
        )
        expect(jsonp.data == {"b": "2", "c": "3"}, f"JSON patch: {jsonp.data}")
        expect_status(422, self.core.patch_namespaced_config_map, "patched", self.ns,
                      [{"op": "test", "path": "/data/b", "value": "9"}], _content_type="application/json-patch+json")
        # Strategic merge: containers merge by name.
        dep = {
            "metadata": {"name": "web", "labels": {"app": "web"}},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "web", "image": "nginx:1"}, {"name": "side", "image": "busybox"}]},
                },
            },
        }
        self.apps.create_namespaced_deployment(self.ns, dep)
        smp = self.apps.patch_namespaced_deployment(
            "web", self.ns, {"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx:2"}]}}}},
            _content_type="application/strategic-merge-patch+json",
        )
        images = [(c.name, c.image) for c in smp.spec.template.spec.containers]
        expect(images == [("web", "nginx:2"), ("side", "busybox")], f"strategic merge: {images}")
        expect(smp.metadata.generation == 2, f"generation {smp.metadata.generation}")

    def check_server_side_apply(self):
        cfg = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"}, "data": {"owner": "a", "x": "1"}}
        out = self.core.patch_namespaced_config_map(
            "applied", self.ns, cfg, field_manager="py-a", _content_type="application/apply-patch+yaml"
        )
        expect(out.data == {"owner": "a", "x": "1"}, f"applied data {out.data}")
        managers = {(m.manager, m.operation) for m in out.metadata.managed_fields}
        expect(("py-a", "Apply") in managers, f"managedFields {managers}")
        other = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"}, "data": {"owner": "b"}}
        e = expect_status(409, self.core.patch_namespaced_config_map, "applied", self.ns, other,
                          field_manager="py-b", _content_type="application/apply-patch+yaml")
        expect("py-a" in (e.body or ""), f"the conflict should name the owner: {e.body}")
        forced = self.core.patch_namespaced_config_map(
            "applied", self.ns, other, field_manager="py-b", force=True, _content_type="application/apply-patch+yaml"
        )
        expect(forced.data == {"owner": "b", "x": "1"}, f"forced data {forced.data}")
        # Manager a no longer applies x: it goes.
        shrunk = self.core.patch_namespaced_config_map(
            "applied", self.ns, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"}},
            field_manager="py-a", _content_type="application/apply-patch+yaml",
        )
        expect(shrunk.data == {"owner": "b"}, f"after a dropped x: {shrunk.data}")

    def check_dynamic_client_apply(self):
        dyn = DynamicClient(self.api)
        cms = dyn.resources.get(api_version="v1", kind="ConfigMap")
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dynamic", "namespace": self.ns}, "data": {"k": "v"}}
        out = cms.server_side_apply(body=body, field_manager="py-dyn")
        expect(out.data.k == "v", f"dynamic apply: {out.data}")
        got = cms.get(name="dynamic", namespace=self.ns)
        expect(got.metadata.managedFields[0].manager == "py-dyn", f"managedFields {got.metadata.managedFields}")

    # -- CRDs with status ----------------------------------------------------------------------

    def _install_crd(self, plural, kind):
        """Creates the CRD unless another check did, and waits until it is Established."""
        name = f"{plural}.{GROUP}"
        try:
            self.ext.create_custom_resource_definition(widget_crd(plural, kind))
        except ApiException as e:
            if e.status != 409:
                raise

        def established():
            got = self.ext.read_custom_resource_definition(name)
            conds = (got.status.conditions or []) if got.status else []
            return any(c.type == "Established" and c.status == "True" for c in conds)

        poll(f"the CRD {name} to be Established", established)

    def check_crd_with_status(self):
        self._install_crd("widgets", "Widget")
        w = {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": "w1"},
             "spec": {"size": 1}, "status": {"phase": "ignored"}}
        created = self.custom.create_namespaced_custom_object(GROUP, "v1", self.ns, "widgets", w)
        expect("status" not in created, f"status set through the main resource: {created.get('status')}")
        expect(created["metadata"]["generation"] == 1, f"generation {created['metadata']}")
        status = self.custom.patch_namespaced_custom_object_status(
            GROUP, "v1", self.ns, "widgets", "w1", {"status": {"phase": "Ready"}, "spec": {"size": 99}},
            _content_type="application/merge-patch+json",
        )
        expect(status["status"] == {"phase": "Ready"}, f"status {status.get('status')}")
        expect(status["spec"] == {"size": 1}, f"spec changed through /status: {status['spec']}")
        expect(status["metadata"]["generation"] == 1, "a status write bumped the generation")
        spec = self.custom.patch_namespaced_custom_object(
            GROUP, "v1", self.ns, "widgets", "w1", {"spec": {"color": "red"}}, _content_type="application/merge-patch+json"
        )
        expect(spec["spec"] == {"size": 1, "color": "red"}, f"spec {spec['spec']}")
        expect(spec["status"] == {"phase": "Ready"}, "a spec write changed the status")
        expect(spec["metadata"]["generation"] == 2, f"generation {spec['metadata']['generation']}")
        got = self.custom.get_namespaced_custom_object_status(GROUP, "v1", self.ns, "widgets", "w1")
        got["status"]["phase"] = "Done"
        replaced = self.custom.replace_namespaced_custom_object_status(GROUP, "v1", self.ns, "widgets", "w1", got)
        expect(replaced["status"]["phase"] == "Done", f"replaced status {replaced['status']}")

    def check_custom_object_apply_and_list(self):
        self._install_crd("widgets", "Widget")
        for i in range(5):
            body = {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": f"applied-{i}", "labels": {"set": "a"}},
                    "spec": {"size": i}}
            self.custom.patch_namespaced_custom_object(
                GROUP, "v1", self.ns, "widgets", f"applied-{i}", body, field_manager="py-apply",
                _content_type="application/apply-patch+yaml",
            )
        names, token = [], None
        while True:
            page = self.custom.list_namespaced_custom_object(GROUP, "v1", self.ns, "widgets", label_selector="set=a", limit=2, _continue=token)
            names += [o["metadata"]["name"] for o in page["items"]]
            token = page["metadata"].get("continue")
            if not token:
                break
        expect(names == [f"applied-{i}" for i in range(5)], f"paged custom objects {names}")
        other = self.ns + "-other"
        self.core.create_namespace(client.V1Namespace(metadata=meta(other)))
        self.custom.create_namespaced_custom_object(
            GROUP, "v1", other, "widgets",
            {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": "elsewhere", "labels": {"set": "a"}}})
        cluster_wide = self.custom.list_cluster_custom_object(GROUP, "v1", "widgets", label_selector="set=a")
        where = sorted((o["metadata"]["namespace"], o["metadata"]["name"]) for o in cluster_wide["items"])
        expect(len(where) == 6 and (other, "elsewhere") in where, f"widgets cluster-wide: {where}")
        self.custom.delete_namespaced_custom_object(GROUP, "v1", self.ns, "widgets", "applied-4")
        expect_status(404, self.custom.get_namespaced_custom_object, GROUP, "v1", self.ns, "widgets", "applied-4")

    # -- Leases ---------------------------------------------------------------------------------

    def check_leases(self):
        now = datetime.datetime.now(datetime.timezone.utc)
        lease = client.V1Lease(
            metadata=meta("leader"),
            spec=client.V1LeaseSpec(holder_identity="py-1", lease_duration_seconds=15, acquire_time=now, renew_time=now),
        )
        created = self.coord.create_namespaced_lease(self.ns, lease)
        expect(created.spec.holder_identity == "py-1", f"holder {created.spec.holder_identity}")
        expect(created.spec.renew_time is not None, "renewTime lost")
        renewed_at = now + datetime.timedelta(seconds=5)
        created.spec.renew_time = renewed_at
        renewed = self.coord.replace_namespaced_lease("leader", self.ns, created)
        expect(abs((renewed.spec.renew_time - renewed_at).total_seconds()) < 1e-3, f"renewTime {renewed.spec.renew_time}")
        # A second candidate with the stale object loses the race.
        created.spec.holder_identity = "py-2"
        expect_status(409, self.coord.replace_namespaced_lease, "leader", self.ns, created)
        renewed.spec.holder_identity = "py-2"
        renewed.spec.lease_transitions = 1
        taken = self.coord.replace_namespaced_lease("leader", self.ns, renewed)
        expect(taken.spec.holder_identity == "py-2" and taken.spec.lease_transitions == 1, f"taken {taken.spec}")
        leases = self.coord.list_namespaced_lease(self.ns)
        expect([l.metadata.name for l in leases.items] == ["leader"], "lease list")

    # -- namespace deletion ---------------------------------------------------------------------

    def check_namespace_deletion(self):
        self._install_crd("widgets", "Widget")
        self._seed_pages()
        self.apps.create_namespaced_deployment(self.ns, {
            "metadata": {"name": "web"},
            "spec": {"selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "web", "image": "nginx:1"}]}}},
        })
        self.coord.create_namespaced_lease(self.ns, client.V1Lease(metadata=meta("leader"), spec=client.V1LeaseSpec(holder_identity="x")))
        self.custom.create_namespaced_custom_object(
            GROUP, "v1", self.ns, "widgets", {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": "w"}})
        self.core.delete_namespace(self.ns)
        ns = self.core.read_namespace(self.ns) if self._exists() else None
        if ns is not None:
            expect(ns.status.phase == "Terminating", f"phase while deleting: {ns.status.phase}")
            expect_status(403, self.core.create_namespaced_config_map, self.ns,
                          client.V1ConfigMap(metadata=meta("late")))
        poll("the namespace to go", lambda: not self._exists())
        expect(self.core.list_namespaced_config_map(self.ns).items == [], "configmaps left behind")
        expect(self.apps.list_namespaced_deployment(self.ns).items == [], "deployments left behind")
        expect(self.coord.list_namespaced_lease(self.ns).items == [], "leases left behind")
        widgets = self.custom.list_namespaced_custom_object(GROUP, "v1", self.ns, "widgets")
        expect(widgets["items"] == [], "custom objects left behind")

    def _exists(self):
        try:
            self.core.read_namespace(self.ns)
            return True
        except ApiException as e:
            if e.status == 404:
                return False
            raise

    def check_crd_deletion(self):
        # A CRD of its own: the other checks keep theirs.
        self._install_crd("gadgets", "Gadget")
        name = f"gadgets.{GROUP}"
        self.custom.create_namespaced_custom_object(
            GROUP, "v1", self.ns, "gadgets", {"apiVersion": f"{GROUP}/v1", "kind": "Gadget", "metadata": {"name": "g"}})
        self.ext.delete_custom_resource_definition(name)

        def gone():
            try:
                self.ext.read_custom_resource_definition(name)
                return False
            except ApiException as e:
                return e.status == 404

        poll("the CRD to go", gone)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kubeconfig", required=True)
    args = parser.parse_args()
    api_client = config.new_client_from_config(config_file=args.kubeconfig)
    checks = Checks(api_client)
    names = [n for n in Checks.__dict__ if n.startswith("check_")]
    failed = 0
    for name in names:
        label = name[len("check_"):]
        try:
            checks.ns = "py-" + label.replace("_", "-")
            checks.core.create_namespace(client.V1Namespace(metadata=meta(checks.ns)))
            getattr(checks, name)()
            print(f"ok {label}", flush=True)
        except Exception as e:  # noqa: BLE001 - every failure is reported, then the next check runs
            failed += 1
            detail = str(e).replace("\n", " ")[:600]
            print(f"FAIL {label}: {type(e).__name__}: {detail}", flush=True)
            traceback.print_exc(file=sys.stderr)
    print(f"{len(names) - failed} of {len(names)} checks passed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
