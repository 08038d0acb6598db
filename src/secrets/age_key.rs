//! The data key of a SOPS file, wrapped for each age recipient (armored age files holding the 32
//! raw key bytes), and unwrapped with the agent's identities.

use std::io::{Read, Write};
use std::str::FromStr;

use age::armor::{ArmoredReader, ArmoredWriter, Format};

use super::SopsError;
use super::metadata::AgeStanza;

/// Unwraps the data key with the first of `identities` that opens one of `stanzas`.
pub(crate) fn unwrap_data_key(
    stanzas: &[AgeStanza],
    identities: &[age::x25519::Identity],
    other_key_kinds: &[String],
) -> Result<[u8; 32], SopsError> {
    let recipients = || {
        stanzas
            .iter()
            .map(|s| s.recipient.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if stanzas.is_empty() {
        let others = if other_key_kinds.is_empty() {
            "no key service".to_string()
        } else {
            other_key_kinds.join(", ")
        };
        return Err(SopsError::NoAgeRecipient { others });
    }
    if identities.is_empty() {
        return Err(SopsError::NoIdentity {
            recipients: recipients(),
        });
    }
    for stanza in stanzas {
        let Ok(decryptor) = age::Decryptor::new(ArmoredReader::new(stanza.enc.as_bytes())) else {
            continue;
        };
        let ids = identities.iter().map(|i| i as &dyn age::Identity);
        let Ok(mut reader) = decryptor.decrypt(ids) else {
            continue;
        };
        let mut key = Vec::with_capacity(32);
        if reader.read_to_end(&mut key).is_err() {
            continue;
        }
        return <[u8; 32]>::try_from(key.as_slice()).map_err(|_| {
            SopsError::Invalid(format!(
                "the data key wrapped for {} is {} bytes long, not 32",
                stanza.recipient,
                key.len()
            ))
        });
    }
    Err(SopsError::NoMatchingIdentity {
        identities: identities.len(),
        recipients: recipients(),
    })
}

/// Reads `age1...` recipients (each entry may hold several, comma-separated, as SOPS takes them).
pub(crate) fn parse_recipients(
    recipients: &[String],
) -> Result<Vec<age::x25519::Recipient>, SopsError> {
    let parsed: Vec<_> = recipients
        .iter()
        .flat_map(|r| r.split(','))
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .map(|r| {
            age::x25519::Recipient::from_str(r).map_err(|e| {
                SopsError::Invalid(format!("`{r}` is not an age recipient (age1...): {e}"))
            })
        })
        .collect::<Result<_, _>>()?;
    if parsed.is_empty() {
        return Err(SopsError::Invalid(
            "no age recipient given: encrypt for at least one (age1...)".to_string(),
        ));
    }
    Ok(parsed)
}

/// Wraps `key` for each recipient, one armored age file each, as SOPS writes them.
pub(crate) fn wrap_data_key(
    key: &[u8; 32],
    recipients: &[age::x25519::Recipient],
) -> Result<Vec<AgeStanza>, SopsError> {
    recipients
        .iter()
        .map(|r| {
            let failed = |e: &dyn std::fmt::Display| {
                SopsError::Invalid(format!("could not wrap the data key for {r}: {e}"))
            };
            let encryptor =
                age::Encryptor::with_recipients(std::iter::once(r as &dyn age::Recipient))
                    .map_err(|e| failed(&e))?;
            let mut out = Vec::new();
            let armor =
                ArmoredWriter::wrap_output(&mut out, Format::AsciiArmor).map_err(|e| failed(&e))?;
            let mut writer = encryptor.wrap_output(armor).map_err(|e| failed(&e))?;
            writer.write_all(key).map_err(|e| failed(&e))?;
            writer
                .finish()
                .and_then(|armor| armor.finish())
                .map_err(|e| failed(&e))?;
            Ok(AgeStanza {
                recipient: r.to_string(),
                enc: String::from_utf8(out).expect("armor is ASCII"),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrapped_key_unwraps_with_its_identity_only() {
        let id = age::x25519::Identity::generate();
        let other = age::x25519::Identity::generate();
        let key = [9u8; 32];
        let stanzas = wrap_data_key(&key, &[id.to_public()]).unwrap();
        assert!(
            stanzas[0]
                .enc
                .starts_with("-----BEGIN AGE ENCRYPTED FILE-----")
        );
        assert_eq!(
            unwrap_data_key(&stanzas, &[other.clone(), id], &[]).unwrap(),
            key
        );
        let err = unwrap_data_key(&stanzas, &[other], &[])
            .unwrap_err()
            .to_string();
        assert!(err.contains("none of the 1 age identities"), "{err}");
        assert!(err.contains(&stanzas[0].recipient), "{err}");
    }

    #[test]
    fn recipients_are_comma_separated_or_repeated() {
        let a = age::x25519::Identity::generate().to_public().to_string();
        let b = age::x25519::Identity::generate().to_public().to_string();
        let parsed = parse_recipients(&[format!("{a},{b}"), a.clone()]).unwrap();
        assert_eq!(parsed.len(), 3);
        let err = parse_recipients(&["age1nope".into()])
            .unwrap_err()
            .to_string();
        assert!(err.contains("`age1nope` is not an age recipient"), "{err}");
    }

    #[test]
    fn no_age_stanza_names_the_other_services() {
        let err = unwrap_data_key(&[], &[age::x25519::Identity::generate()], &["pgp".into()])
            .unwrap_err()
            .to_string();
        assert!(err.contains("pgp"), "{err}");
    }
}
