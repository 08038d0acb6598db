//! AutoNodePolicy requirements read against an ARO node pool (`policies.md` §3): Karpenter's node
//! selector requirements `{key, operator, values, minValues}`, each judged on the one value the
//! node pool has for the field its key maps to.
//!
//! Key mapping ([`Field::of_key`]): `node.kubernetes.io/instance-type` → `vmSize`,
//! `topology.kubernetes.io/zone` → `availabilityZone` (both under `spec.properties.platform`),
//! `kubernetes.io/arch` → the architecture the VM size implies ([`arch_of`]). Other keys have no
//! ARO node pool field and constrain nothing (the policy's status lists them as ignored).
//!
//! Operators, on the node pool's value `v` (unset when the pool does not write the field):
//! `In` v set and among the values; `NotIn` v unset or not among them; `Exists` v set;
//! `DoesNotExist` v unset; `Gt`/`Lt` v set, an integer, above/below the requirement's one integer
//! value. VM sizes compare case-insensitively (Azure treats them so), zones exactly.
//! A node pool that pins no zone is regional: zone `In`, `NotIn`, `Gt` and `Lt` constrain only the
//! pools that pin one (`Exists` still requires a zone, `DoesNotExist` still forbids one).
//! `minValues`: a node pool has exactly one value per key, so `minValues` above 1 is never met.

use serde_json::Value;

/// The node pool field a requirement key maps to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    VmSize,
    Zone,
    Arch,
}

impl Field {
    /// The field `key` maps to, if any.
    pub fn of_key(key: &str) -> Option<Field> {
        match key {
            "node.kubernetes.io/instance-type" => Some(Field::VmSize),
            "topology.kubernetes.io/zone" => Some(Field::Zone),
            "kubernetes.io/arch" => Some(Field::Arch),
            _ => None,
        }
    }

    /// How messages name it.
    pub fn name(self) -> &'static str {
        match self {
            Field::VmSize => "vmSize",
            Field::Zone => "availabilityZone",
            Field::Arch => "architecture",
        }
    }
}

/// A requirement's operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
    Gt,
    Lt,
}

impl Operator {
    fn parse(s: &str) -> Option<Operator> {
        Some(match s {
            "In" => Operator::In,
            "NotIn" => Operator::NotIn,
            "Exists" => Operator::Exists,
            "DoesNotExist" => Operator::DoesNotExist,
            "Gt" => Operator::Gt,
            "Lt" => Operator::Lt,
            _ => return None,
        })
    }

    fn as_str(self) -> &'static str {
        match self {
            Operator::In => "In",
            Operator::NotIn => "NotIn",
            Operator::Exists => "Exists",
            Operator::DoesNotExist => "DoesNotExist",
            Operator::Gt => "Gt",
            Operator::Lt => "Lt",
        }
    }
}

/// One entry of `spec.nodePoolDefaults.requirements`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    pub key: String,
    /// The node pool field `key` maps to; `None`: no ARO field, ignored.
    pub field: Option<Field>,
    pub operator: Operator,
    pub values: Vec<String>,
    pub min_values: Option<u64>,
    /// The integer bound of `Gt`/`Lt`.
    bound: Option<i64>,
}

impl Requirement {
    /// Reads requirement `index` of a policy; the error says what is wrong with it.
    pub fn parse(v: &Value, index: usize) -> Result<Requirement, String> {
        let at = format!("spec.nodePoolDefaults.requirements[{index}]");
        let key = v
            .get("key")
            .and_then(Value::as_str)
            .filter(|k| !k.is_empty())
            .ok_or_else(|| format!("{at}.key is required"))?;
        let op = v.get("operator").and_then(Value::as_str).unwrap_or("");
        let operator = Operator::parse(op).ok_or_else(|| {
            format!("{at}.operator {op:?} is not one of In, NotIn, Exists, DoesNotExist, Gt, Lt")
        })?;
        let values: Vec<String> = match v.get("values") {
            None | Some(Value::Null) => vec![],
            Some(Value::Array(list)) => list
                .iter()
                .map(|x| {
                    x.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| format!("{at}.values must be strings"))
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(format!("{at}.values must be a list")),
        };
        let bound = match operator {
            Operator::Gt | Operator::Lt => match values.as_slice() {
                [one] => Some(one.parse::<i64>().map_err(|_| {
                    format!(
                        "{at}: {} takes one integer value, not {one:?}",
                        operator.as_str()
                    )
                })?),
                _ => {
                    return Err(format!(
                        "{at}: {} takes exactly one integer value",
                        operator.as_str()
                    ));
                }
            },
            Operator::In | Operator::NotIn if values.is_empty() => {
                return Err(format!(
                    "{at}: {} needs at least one value",
                    operator.as_str()
                ));
            }
            _ => None,
        };
        let min_values = match v.get("minValues") {
            None | Some(Value::Null) => None,
            Some(m) => Some(
                m.as_u64()
                    .filter(|n| *n >= 1)
                    .ok_or_else(|| format!("{at}.minValues must be a positive integer"))?,
            ),
        };
        Ok(Requirement {
            key: key.to_string(),
            field: Field::of_key(key),
            operator,
            values,
            min_values,
            bound,
        })
    }

    /// Whether the node pool value `value` (`None`: unset) satisfies this requirement.
    pub fn allows(&self, value: Option<&str>) -> bool {
        let regional = self.field == Some(Field::Zone) && value.is_none();
        let among = |v: &str| {
            self.values.iter().any(|x| match self.field {
                Some(Field::VmSize) => x.eq_ignore_ascii_case(v),
                _ => x == v,
            })
        };
        match self.operator {
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            _ if regional => true,
            Operator::In => value.is_some_and(among),
            Operator::NotIn => !value.is_some_and(among),
            Operator::Gt | Operator::Lt => {
                let (Some(v), Some(bound)) =
                    (value.and_then(|v| v.parse::<i64>().ok()), self.bound)
                else {
                    return false;
                };
                if self.operator == Operator::Gt {
                    v > bound
                } else {
                    v < bound
                }
            }
        }
    }

    /// The requirement as messages quote it: `key Operator [values]`.
    pub fn describe(&self) -> String {
        let mut s = format!("{} {}", self.key, self.operator.as_str());
        if !self.values.is_empty() {
            s.push_str(&format!(" [{}]", self.values.join(", ")));
        }
        if let Some(m) = self.min_values {
            s.push_str(&format!(", minValues {m}"));
        }
        s
    }
}

/// The CPU architecture an Azure VM size implies: `arm64` when the size's feature letters (the
/// lowercase letters after the vCPU count, as in `Standard_D4ps_v5` or `Standard_E8pds_v5`) hold
/// a `p` (Azure's letter for Arm-based processors), `amd64` for every other size. The family
/// letters before the vCPU count do not count (`Standard_NP10s` is x86).
pub fn arch_of(vm_size: &str) -> &'static str {
    let name = vm_size
        .split_once('_')
        .filter(|(tier, _)| {
            tier.eq_ignore_ascii_case("standard") || tier.eq_ignore_ascii_case("basic")
        })
        .map_or(vm_size, |(_, rest)| rest);
    let size = name.split('_').next().unwrap_or("");
    let after_family = size.trim_start_matches(|c: char| c.is_ascii_alphabetic());
    let after_count = after_family.trim_start_matches(|c: char| c.is_ascii_digit() || c == '-');
    let features: String = after_count
        .chars()
        .take_while(char::is_ascii_alphabetic)
        .collect();
    if features.to_ascii_lowercase().contains('p') {
        "arm64"
    } else {
        "amd64"
    }
}

#[cfg(test)]
#[allow(clippy::type_complexity)] // tables of tuples
mod tests {
    use super::*;
    use serde_json::json;

    fn req(key: &str, op: &str, values: &[&str]) -> Requirement {
        Requirement::parse(&json!({"key": key, "operator": op, "values": values}), 0)
            .expect("a valid requirement")
    }

    #[test]
    fn every_operator_on_every_field() {
        const SIZE: &str = "node.kubernetes.io/instance-type";
        const ZONE: &str = "topology.kubernetes.io/zone";
        const ARCH: &str = "kubernetes.io/arch";
        // (key, operator, values, node pool value, allowed)
        let rows: Vec<(&str, &str, &[&str], Option<&str>, bool)> = vec![
            (
                SIZE,
                "In",
                &["Standard_D4s_v3"],
                Some("Standard_D4s_v3"),
                true,
            ),
            (
                SIZE,
                "In",
                &["Standard_D4s_v3"],
                Some("standard_d4s_V3"),
                true,
            ),
            (
                SIZE,
                "In",
                &["Standard_D4s_v3"],
                Some("Standard_D2s_v3"),
                false,
            ),
            (SIZE, "In", &["Standard_D4s_v3"], None, false),
            (
                SIZE,
                "NotIn",
                &["Standard_D2s_v3"],
                Some("Standard_D4s_v3"),
                true,
            ),
            (
                SIZE,
                "NotIn",
                &["Standard_D2s_v3"],
                Some("Standard_D2s_v3"),
                false,
            ),
            (SIZE, "NotIn", &["Standard_D2s_v3"], None, true),
            (SIZE, "Exists", &[], Some("Standard_D4s_v3"), true),
            (SIZE, "Exists", &[], None, false),
            (SIZE, "DoesNotExist", &[], Some("Standard_D4s_v3"), false),
            (SIZE, "DoesNotExist", &[], None, true),
            (SIZE, "Gt", &["3"], Some("Standard_D4s_v3"), false),
            (ZONE, "In", &["1", "2"], Some("2"), true),
            (ZONE, "In", &["1", "2"], Some("3"), false),
            (ZONE, "In", &["1", "2"], None, true),
            (ZONE, "NotIn", &["3"], Some("3"), false),
            (ZONE, "NotIn", &["3"], Some("1"), true),
            (ZONE, "NotIn", &["3"], None, true),
            (ZONE, "Exists", &[], None, false),
            (ZONE, "Exists", &[], Some("1"), true),
            (ZONE, "DoesNotExist", &[], Some("1"), false),
            (ZONE, "DoesNotExist", &[], None, true),
            (ZONE, "Gt", &["1"], Some("2"), true),
            (ZONE, "Gt", &["1"], Some("1"), false),
            (ZONE, "Gt", &["1"], None, true),
            (ZONE, "Lt", &["3"], Some("2"), true),
            (ZONE, "Lt", &["3"], Some("3"), false),
            (ZONE, "Lt", &["3"], Some("westus-1"), false),
            (ARCH, "In", &["amd64"], Some("amd64"), true),
            (ARCH, "In", &["amd64"], Some("arm64"), false),
            (ARCH, "NotIn", &["arm64"], Some("arm64"), false),
            (ARCH, "Exists", &[], Some("amd64"), true),
            (ARCH, "DoesNotExist", &[], Some("amd64"), false),
            (ARCH, "Lt", &["5"], Some("amd64"), false),
        ];
        for (key, op, values, value, want) in rows {
            assert_eq!(
                req(key, op, values).allows(value),
                want,
                "{key} {op} {values:?} on {value:?}"
            );
        }
    }

    #[test]
    fn keys_map_to_node_pool_fields() {
        let rows = [
            ("node.kubernetes.io/instance-type", Some(Field::VmSize)),
            ("topology.kubernetes.io/zone", Some(Field::Zone)),
            ("kubernetes.io/arch", Some(Field::Arch)),
            ("karpenter.sh/capacity-type", None),
            ("kubernetes.io/os", None),
        ];
        for (key, field) in rows {
            assert_eq!(Field::of_key(key), field, "{key}");
            assert_eq!(req(key, "Exists", &[]).field, field, "{key}");
        }
    }

    #[test]
    fn the_architecture_of_a_vm_size() {
        let rows = [
            ("Standard_D4s_v3", "amd64"),
            ("Standard_E8s_v3", "amd64"),
            ("Standard_D4ps_v5", "arm64"),
            ("Standard_D2plds_v5", "arm64"),
            ("Standard_E8pds_v5", "arm64"),
            ("Standard_B2pts_v2", "arm64"),
            ("standard_d4ps_v5", "arm64"),
            ("Standard_NP10s", "amd64"),
            ("Standard_NC24ads_A100_v4", "amd64"),
            ("Standard_E4-2ds_v4", "amd64"),
            ("Standard_DC4as_cc_v5", "amd64"),
            ("D4ps_v5", "arm64"),
            ("", "amd64"),
        ];
        for (size, arch) in rows {
            assert_eq!(arch_of(size), arch, "{size}");
        }
    }

    #[test]
    fn malformed_requirements_say_what_is_wrong() {
        let rows = [
            (
                json!({"key": "k", "operator": "Equals"}),
                "spec.nodePoolDefaults.requirements[3].operator \"Equals\" is not one of In, NotIn, Exists, DoesNotExist, Gt, Lt",
            ),
            (
                json!({"operator": "Exists"}),
                "spec.nodePoolDefaults.requirements[3].key is required",
            ),
            (
                json!({"key": "k", "operator": "In"}),
                "spec.nodePoolDefaults.requirements[3]: In needs at least one value",
            ),
            (
                json!({"key": "k", "operator": "Gt", "values": ["a"]}),
                "spec.nodePoolDefaults.requirements[3]: Gt takes one integer value, not \"a\"",
            ),
            (
                json!({"key": "k", "operator": "Lt", "values": ["1", "2"]}),
                "spec.nodePoolDefaults.requirements[3]: Lt takes exactly one integer value",
            ),
            (
                json!({"key": "k", "operator": "In", "values": [1]}),
                "spec.nodePoolDefaults.requirements[3].values must be strings",
            ),
            (
                json!({"key": "k", "operator": "Exists", "minValues": 0}),
                "spec.nodePoolDefaults.requirements[3].minValues must be a positive integer",
            ),
        ];
        for (v, want) in rows {
            assert_eq!(Requirement::parse(&v, 3).unwrap_err(), want);
        }
        let r = Requirement::parse(
            &json!({"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"], "minValues": 2}),
            0,
        )
        .unwrap();
        assert_eq!(r.describe(), "kubernetes.io/arch In [amd64], minValues 2");
    }
}
