//! Azure's own rules for the ASO resources a unit declares, checked before anything is applied:
//! the naming rules of each resource type (length, characters, first and last character, as Azure
//! Resource Manager states them) and the node pool's autoscaling bounds. A name Azure would refuse
//! is reported here, naming the field, instead of failing later at the ARM call.

use serde_json::Value;

/// One Azure resource type's naming rule.
struct NameRule {
    group: &'static str,
    kind: &'static str,
    /// What the message calls the resource.
    what: &'static str,
    min: usize,
    max: usize,
    /// Characters allowed anywhere.
    allowed: fn(char) -> bool,
    first: fn(char) -> bool,
    last: fn(char) -> bool,
    /// The rule in words, for the message.
    words: &'static str,
    /// Two hyphens in a row are refused (Key Vault).
    no_double_hyphen: bool,
}

fn alnum(c: char) -> bool {
    c.is_ascii_alphanumeric()
}
fn letter(c: char) -> bool {
    c.is_ascii_alphabetic()
}
fn alnum_or_underscore(c: char) -> bool {
    alnum(c) || c == '_'
}
fn alnum_hyphen(c: char) -> bool {
    alnum(c) || c == '-'
}
fn network_chars(c: char) -> bool {
    alnum(c) || matches!(c, '_' | '.' | '-')
}
fn identity_chars(c: char) -> bool {
    alnum(c) || matches!(c, '_' | '-')
}
fn resource_group_chars(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '.' | '-' | '(' | ')')
}
fn not_a_period(c: char) -> bool {
    c != '.'
}
fn any(_: char) -> bool {
    true
}

/// The rule of subnets and network security groups, in words.
const NETWORK_1_TO_80: &str = "1 to 80 letters, digits, underscores, periods and hyphens, starting with a letter or digit, ending with a letter, digit or underscore";

const RULES: &[NameRule] = &[
    NameRule {
        group: "resources.azure.com",
        kind: "ResourceGroup",
        what: "resource group",
        min: 1,
        max: 90,
        allowed: resource_group_chars,
        first: any,
        last: not_a_period,
        words: "1 to 90 letters, digits, underscores, hyphens, periods and parentheses, not ending in a period",
        no_double_hyphen: false,
    },
    NameRule {
        group: "keyvault.azure.com",
        kind: "Vault",
        what: "Key Vault",
        min: 3,
        max: 24,
        allowed: alnum_hyphen,
        first: letter,
        last: alnum,
        words: "3 to 24 letters, digits and hyphens, starting with a letter, ending with a letter or digit, no two hyphens in a row",
        no_double_hyphen: true,
    },
    NameRule {
        group: "network.azure.com",
        kind: "VirtualNetwork",
        what: "virtual network",
        min: 2,
        max: 64,
        allowed: network_chars,
        first: alnum,
        last: alnum_or_underscore,
        words: "2 to 64 letters, digits, underscores, periods and hyphens, starting with a letter or digit, ending with a letter, digit or underscore",
        no_double_hyphen: false,
    },
    NameRule {
        group: "network.azure.com",
        kind: "VirtualNetworksSubnet",
        what: "subnet",
        min: 1,
        max: 80,
        allowed: network_chars,
        first: alnum,
        last: alnum_or_underscore,
        words: NETWORK_1_TO_80,
        no_double_hyphen: false,
    },
    NameRule {
        group: "network.azure.com",
        kind: "NetworkSecurityGroup",
        what: "network security group",
        min: 1,
        max: 80,
        allowed: network_chars,
        first: alnum,
        last: alnum_or_underscore,
        words: NETWORK_1_TO_80,
        no_double_hyphen: false,
    },
    NameRule {
        group: "managedidentity.azure.com",
        kind: "UserAssignedIdentity",
        what: "managed identity",
        min: 3,
        max: 128,
        allowed: identity_chars,
        first: alnum,
        last: any,
        words: "3 to 128 letters, digits, hyphens and underscores, starting with a letter or digit",
        no_double_hyphen: false,
    },
    NameRule {
        group: "redhatopenshift.azure.com",
        kind: "HcpOpenShiftCluster",
        what: "ARO HCP cluster",
        min: 3,
        max: 54,
        allowed: alnum_hyphen,
        first: letter,
        last: alnum,
        words: "3 to 54 letters, digits and hyphens, starting with a letter, ending with a letter or digit",
        no_double_hyphen: false,
    },
    NameRule {
        group: "redhatopenshift.azure.com",
        kind: "HcpOpenShiftClustersNodePool",
        what: "ARO HCP node pool",
        min: 3,
        max: 15,
        allowed: alnum_hyphen,
        first: letter,
        last: alnum,
        words: "3 to 15 letters, digits and hyphens, starting with a letter, ending with a letter or digit",
        no_double_hyphen: false,
    },
];

/// Whether `name` breaks `rule`.
fn breaks(rule: &NameRule, name: &str) -> bool {
    let count = name.chars().count();
    count < rule.min
        || count > rule.max
        || !name.chars().all(rule.allowed)
        || !name.chars().next().is_some_and(rule.first)
        || !name.chars().last().is_some_and(rule.last)
        || (rule.no_double_hyphen && name.contains("--"))
}

/// Azure's rules broken by one ASO resource (top-level or embedded): each message starts with the
/// field's JSON pointer, `prefix` prepended.
pub fn problems(obj: &Value, prefix: &str) -> Vec<String> {
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let group = api_version.split_once('/').map(|(g, _)| g).unwrap_or("");
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    let mut out = Vec::new();
    if let Some(rule) = RULES.iter().find(|r| r.group == group && r.kind == kind) {
        let (pointer, name) = match obj.pointer("/spec/azureName").and_then(Value::as_str) {
            Some(name) => ("/spec/azureName", name),
            None => (
                "/metadata/name",
                obj.pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or(""),
            ),
        };
        if !name.is_empty() && breaks(rule, name) {
            out.push(format!(
                "{prefix}{pointer}: {name:?} is not a valid Azure {} name: Azure takes {}",
                rule.what, rule.words
            ));
        }
    }
    if kind == "HcpOpenShiftClustersNodePool"
        && let Some(scaling) = obj.pointer("/spec/properties/autoScaling")
        && let (Some(min), Some(max)) = (
            scaling.get("min").and_then(Value::as_i64),
            scaling.get("max").and_then(Value::as_i64),
        )
        && min > max
    {
        out.push(format!(
            "{prefix}/spec/properties/autoScaling: min {min} is above max {max}: a node pool autoscales between min and max nodes, so min must not exceed max"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn named(api_version: &str, kind: &str, azure_name: &str) -> Value {
        json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"},
               "spec": {"azureName": azure_name}})
    }

    #[test]
    fn names_azure_takes_pass() {
        for (v, k, n) in [
            (
                "resources.azure.com/v1api20200601",
                "ResourceGroup",
                "aro-dev-rg",
            ),
            (
                "resources.azure.com/v1api20200601",
                "ResourceGroup",
                "rg_(one).two",
            ),
            (
                "keyvault.azure.com/v1api20230701",
                "Vault",
                "arogitops-dev-kv",
            ),
            (
                "network.azure.com/v1api20240301",
                "VirtualNetwork",
                "aro-dev-vnet",
            ),
            (
                "managedidentity.azure.com/v1api20230131",
                "UserAssignedIdentity",
                "dev-cp-mi",
            ),
            (
                "redhatopenshift.azure.com/v1api20240610preview",
                "HcpOpenShiftCluster",
                "aro-dev",
            ),
            (
                "redhatopenshift.azure.com/v1api20240610preview",
                "HcpOpenShiftClustersNodePool",
                "workers",
            ),
        ] {
            assert_eq!(
                problems(&named(v, k, n), ""),
                Vec::<String>::new(),
                "{k} {n}"
            );
        }
    }

    #[test]
    fn names_azure_refuses_are_reported_with_the_field_and_the_rule() {
        let rg = problems(
            &named("resources.azure.com/v1", "ResourceGroup", "aro-dev-rg."),
            "/spec/resources/0 (ResourceGroup/rg)",
        );
        assert_eq!(rg.len(), 1);
        assert!(rg[0].starts_with("/spec/resources/0 (ResourceGroup/rg)/spec/azureName: \"aro-dev-rg.\" is not a valid Azure resource group name"), "{rg:?}");
        for (v, k, n) in [
            (
                "keyvault.azure.com/v1",
                "Vault",
                "arogitops-dev-kv-0123456789abcd",
            ),
            ("keyvault.azure.com/v1", "Vault", "1vault"),
            ("keyvault.azure.com/v1", "Vault", "my--vault"),
            ("network.azure.com/v1", "VirtualNetwork", "-vnet"),
            (
                "redhatopenshift.azure.com/v1",
                "HcpOpenShiftCluster",
                "bad_name!",
            ),
            (
                "redhatopenshift.azure.com/v1",
                "HcpOpenShiftClustersNodePool",
                "a-much-too-long-pool",
            ),
        ] {
            assert_eq!(problems(&named(v, k, n), "").len(), 1, "{k} {n}");
        }
    }

    #[test]
    fn the_metadata_name_counts_when_there_is_no_azure_name() {
        let rg = json!({"apiVersion": "resources.azure.com/v1", "kind": "ResourceGroup",
                        "metadata": {"name": "ends."}, "spec": {}});
        assert!(problems(&rg, "")[0].starts_with("/metadata/name: "));
    }

    #[test]
    fn autoscaling_min_above_max_is_refused() {
        let pool = json!({"apiVersion": "redhatopenshift.azure.com/v1", "kind": "HcpOpenShiftClustersNodePool",
                          "metadata": {"name": "workers"},
                          "spec": {"properties": {"autoScaling": {"min": 5, "max": 2}}}});
        let p = problems(&pool, "");
        assert_eq!(p.len(), 1);
        assert!(p[0].contains("min 5 is above max 2"), "{p:?}");
        let fine = json!({"apiVersion": "redhatopenshift.azure.com/v1", "kind": "HcpOpenShiftClustersNodePool",
                          "metadata": {"name": "workers"},
                          "spec": {"properties": {"autoScaling": {"min": 2, "max": 5}}}});
        assert!(problems(&fine, "").is_empty());
    }
}
