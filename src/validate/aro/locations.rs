//! The Azure locations where ARO HCP is offered, and the check of every ASO resource's
//! `spec.location` against them.
//!
//! **Source.** Azure's list of public-cloud regions (learn.microsoft.com, "Azure regions list",
//! programmatic names) crossed with Azure's "Products available by region" for Azure Red Hat
//! OpenShift; read 2026-11-29. The service publishes no separate list for hosted control planes
//! in those pages, so this is where ARO is offered; a location the hosted service does not serve
//! yet is still refused by Azure at provisioning. Keep the table sorted; add a region when Azure
//! announces ARO there.
//!
//! Azure takes a location's programmatic name (`eastus`) or its display name (`East US`): they
//! are compared without case and spaces, as Azure Resource Manager does.

use super::{Declared, Problem};

/// Programmatic names of the Azure locations where ARO is offered (see the module header).
pub const ARO_HCP_LOCATIONS: &[&str] = &[
    "australiacentral",
    "australiacentral2",
    "australiaeast",
    "australiasoutheast",
    "austriaeast",
    "belgiumcentral",
    "brazilsouth",
    "brazilsoutheast",
    "canadacentral",
    "canadaeast",
    "centralindia",
    "centralus",
    "chilecentral",
    "eastasia",
    "eastus",
    "eastus2",
    "francecentral",
    "francesouth",
    "germanynorth",
    "germanywestcentral",
    "indonesiacentral",
    "israelcentral",
    "italynorth",
    "japaneast",
    "japanwest",
    "koreacentral",
    "koreasouth",
    "malaysiawest",
    "mexicocentral",
    "newzealandnorth",
    "northcentralus",
    "northeurope",
    "norwayeast",
    "norwaywest",
    "polandcentral",
    "qatarcentral",
    "southafricanorth",
    "southafricawest",
    "southcentralus",
    "southeastasia",
    "southindia",
    "spaincentral",
    "swedencentral",
    "switzerlandnorth",
    "switzerlandwest",
    "uaecentral",
    "uaenorth",
    "uksouth",
    "ukwest",
    "westcentralus",
    "westeurope",
    "westindia",
    "westus",
    "westus2",
    "westus3",
];

/// How Azure compares locations: without case and spaces.
fn normalized(location: &str) -> String {
    location
        .chars()
        .filter(|c| !c.is_whitespace())
        .flat_map(char::to_lowercase)
        .collect()
}

/// Whether ARO HCP is offered in `location` (a programmatic or display name).
pub fn is_offered(location: &str) -> bool {
    ARO_HCP_LOCATIONS.contains(&normalized(location).as_str())
}

/// Edit distance between two names, a swap of neighbours counting as one edit (a typo's usual
/// shape: "eastsu").
fn distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

/// The table's name nearest to `location` when it looks like a typo of it: one edit for short
/// names, two from five characters on.
pub fn nearest_location(location: &str) -> Option<&'static str> {
    let wanted = normalized(location);
    let limit = if wanted.chars().count() < 5 { 1 } else { 2 };
    ARO_HCP_LOCATIONS
        .iter()
        .map(|l| (distance(&wanted, l), *l))
        .filter(|(d, _)| *d <= limit)
        .min()
        .map(|(_, l)| l)
}

/// One problem per top-level object and wrong location: the first resource that says it is
/// named, and how many others of the object repeat it.
pub(super) fn problems(declared: &Declared) -> Vec<Problem> {
    let mut out: Vec<(Problem, String, usize)> = Vec::new();
    for item in declared
        .items
        .iter()
        .filter(|i| i.group.ends_with(".azure.com"))
    {
        let Some(location) = item.str("/spec/location") else {
            continue;
        };
        if is_offered(location) {
            continue;
        }
        if let Some((_, _, more)) = out
            .iter_mut()
            .find(|(p, l, _)| p.object == item.object && l == location)
        {
            *more += 1;
            continue;
        }
        let hint = nearest_location(location)
            .map(|l| format!("; did you mean {l:?}?"))
            .unwrap_or_default();
        let what = format!(
            "{location:?} is not an Azure location where ARO HCP is offered: a cluster and its Azure resources take one of the project's ARO HCP locations (src/validate/aro/locations.rs, e.g. \"eastus\"){hint}"
        );
        out.push((
            item.problem("/spec/location", what),
            location.to_string(),
            0,
        ));
    }
    out.into_iter()
        .map(|(mut p, _, more)| {
            match more {
                0 => {}
                1 => p
                    .message
                    .push_str(" (1 more resource of this object says it too)"),
                n => p
                    .message
                    .push_str(&format!(" ({n} more resources of this object say it too)")),
            }
            p
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::aro::testutil::{messages, set, unit};

    #[test]
    fn locations_azure_writes_either_way_are_offered() {
        assert!(is_offered("eastus"));
        assert!(is_offered("East US 2"));
        assert!(is_offered("WESTEUROPE"));
        assert!(!is_offered("Mars Central"));
        assert!(!is_offered(""));
    }

    #[test]
    fn the_table_is_sorted_and_lower_case() {
        let mut sorted = ARO_HCP_LOCATIONS.to_vec();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted, ARO_HCP_LOCATIONS);
        assert!(ARO_HCP_LOCATIONS.iter().all(|l| *l == normalized(l)));
    }

    #[test]
    fn a_typo_gets_the_nearest_name_and_a_made_up_place_none() {
        assert_eq!(nearest_location("eastsu"), Some("eastus"));
        assert_eq!(nearest_location("West Europa"), Some("westeurope"));
        assert_eq!(nearest_location("uksouht"), Some("uksouth"));
        assert_eq!(nearest_location("Mars Central"), None);
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("eastsu", "eastus"), 1);
    }

    #[test]
    fn a_wrong_location_is_said_once_per_object_with_the_field_and_the_rule() {
        assert!(messages(unit()).is_empty(), "{:?}", messages(unit()));
        let mut objects = unit();
        for pointer in [
            "/spec/resources/0/spec/location",
            "/spec/resources/1/spec/location",
        ] {
            set(&mut objects, "AROCluster", pointer, "eastsu");
        }
        let m = messages(objects);
        assert_eq!(m.len(), 1, "{m:?}");
        assert!(
            m[0].starts_with("AROCluster: /spec/resources/0/spec/location: \"eastsu\" is not an Azure location where ARO HCP is offered"),
            "{}",
            m[0]
        );
        assert!(m[0].contains("did you mean \"eastus\"?"), "{}", m[0]);
        assert!(
            m[0].ends_with("(1 more resource of this object says it too)"),
            "{}",
            m[0]
        );
    }
}
