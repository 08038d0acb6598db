//! `images` and `replicas`.
//!
//! An `images` entry rewrites every matching container image: in any `containers` or `initContainers` list
//! anywhere in an object (as kustomize's legacy image filter does), then at the configured image fields.
//! An image matches when it is the entry's `name` (a regular expression, as in kustomize) optionally
//! followed by a tag and/or digest; `newName` replaces the name, `newTag` the tag (dropping a digest),
//! `digest` the digest (dropping a tag), and both together give `name:tag@digest`. `tagSuffix` is read
//! but, as in kustomize v5.5, changes nothing; a container without an image gets none.
//!
//! A `replicas` entry sets `spec.replicas` of the objects of that name (current or any previous name) whose
//! kind the replica field specs name; matching none is an error, as in kustomize.

use super::fieldspec::{self, Create, FieldSpec};
use super::kustomization::Image;
use super::resources::ResMap;
use serde_json::Value;

/// Applies one `images` entry.
pub fn set_image(resources: &mut ResMap, image: &Image, specs: &[FieldSpec]) -> Result<(), String> {
    // kustomize v5 matches on the image's name, split from its tag and digest, exactly.
    let update = |v: &mut Value| -> Result<(), String> {
        let Value::String(current) = v else {
            return Ok(());
        };
        if split(current).0 == image.name {
            *v = Value::String(rewrite(current, image));
        }
        Ok(())
    };
    for res in resources.resources_mut() {
        let id = res.cur_id();
        legacy_walk(res.object_mut(), &update).map_err(|e| format!("{id}: {e}"))?;
        let gvk = res.gvk();
        for spec in specs {
            let mut set = |v: &mut Value| update(v);
            let spec = FieldSpec {
                create: false,
                ..spec.clone()
            };
            fieldspec::apply(res.object_mut(), &gvk, &spec, Create::Scalar, &mut set)
                .map_err(|e| format!("{id}: {e}"))?;
        }
    }
    Ok(())
}

/// Visits `image` of every element of any `containers`/`initContainers` list in `v`.
fn legacy_walk(
    v: &mut Value,
    update: &dyn Fn(&mut Value) -> Result<(), String>,
) -> Result<(), String> {
    match v {
        Value::Array(items) => items.iter_mut().try_for_each(|i| legacy_walk(i, update)),
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                legacy_walk(child, update)?;
                if (key == "containers" || key == "initContainers")
                    && let Value::Array(containers) = child
                {
                    for c in containers {
                        if let Some(img) = c.get_mut("image") {
                            update(img)?;
                        }
                    }
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Splits an image into name, tag and digest (a `:` in a registry host is not a tag).
fn split(image: &str) -> (&str, &str, &str) {
    let slash = image.find('/').filter(|&i| i > 0).unwrap_or(0);
    let search = &image[slash..];
    let at = search.find('@').map(|i| i + slash);
    let colon = search.find(':').map(|i| i + slash);
    match (colon, at) {
        (None, None) => (image, "", ""),
        (c, Some(a)) if c.is_none_or(|c| a < c) => (&image[..a], "", &image[a + 1..]),
        (Some(c), Some(a)) => (&image[..c], &image[c + 1..a], &image[a + 1..]),
        (Some(c), None) => (&image[..c], &image[c + 1..], ""),
        (None, Some(_)) => unreachable!("handled above"),
    }
}

fn rewrite(current: &str, image: &Image) -> String {
    let (name, tag, digest) = split(current);
    let name = if image.new_name.is_empty() {
        name
    } else {
        &image.new_name
    };
    let (tag, digest) = match (image.new_tag.as_str(), image.digest.as_str()) {
        ("", "") => (tag.to_string(), digest.to_string()),
        (t, "") => (t.to_string(), String::new()),
        ("", d) => (String::new(), d.to_string()),
        (t, d) => (t.to_string(), d.to_string()),
    };
    let mut out = name.to_string();
    if !tag.is_empty() {
        out.push(':');
        out.push_str(&tag);
    }
    if !digest.is_empty() {
        out.push('@');
        out.push_str(&digest);
    }
    out
}

/// Applies one `replicas` entry.
pub fn set_replicas(
    resources: &mut ResMap,
    name: &str,
    count: i64,
    specs: &[FieldSpec],
) -> Result<(), String> {
    let mut found = false;
    for spec in specs {
        for res in resources.resources_mut() {
            let mut ids = res.prev_ids();
            ids.push(res.cur_id());
            if !ids
                .iter()
                .any(|id| id.name == name && spec.applies_to(&id.gvk))
            {
                continue;
            }
            found = true;
            let gvk = res.gvk();
            fieldspec::apply(res.object_mut(), &gvk, spec, Create::Scalar, &mut |v| {
                *v = Value::from(count);
                Ok(())
            })?;
        }
    }
    if !found {
        return Err(format!(
            "no object named {name} of a kind with replicas ({})",
            specs
                .iter()
                .map(|s| s.gvk.kind.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn img(f: impl FnOnce(&mut Image)) -> Image {
        let mut i = Image {
            name: "nginx".into(),
            ..Default::default()
        };
        f(&mut i);
        i
    }

    #[test]
    fn splits_names_tags_and_digests() {
        assert_eq!(split("nginx"), ("nginx", "", ""));
        assert_eq!(split("nginx:1.2"), ("nginx", "1.2", ""));
        assert_eq!(split("nginx@sha256:abc"), ("nginx", "", "sha256:abc"));
        assert_eq!(
            split("nginx:1.2@sha256:abc"),
            ("nginx", "1.2", "sha256:abc")
        );
        assert_eq!(split("host:5000/nginx:1.2"), ("host:5000/nginx", "1.2", ""));
        assert_eq!(split("host:5000/nginx"), ("host:5000/nginx", "", ""));
    }

    #[test]
    fn rewrites_like_kustomize() {
        assert_eq!(
            rewrite("nginx:1", &img(|i| i.new_tag = "2".into())),
            "nginx:2"
        );
        assert_eq!(
            rewrite("nginx@sha256:x", &img(|i| i.new_tag = "2".into())),
            "nginx:2"
        );
        assert_eq!(
            rewrite("nginx:1", &img(|i| i.digest = "sha256:y".into())),
            "nginx@sha256:y"
        );
        assert_eq!(
            rewrite("nginx:1", &img(|i| i.new_name = "my/nginx".into())),
            "my/nginx:1"
        );
        assert_eq!(
            rewrite(
                "nginx",
                &img(|i| {
                    i.new_tag = "2".into();
                    i.digest = "sha256:y".into();
                })
            ),
            "nginx:2@sha256:y"
        );
    }
}
