use super::*;

fn messages(errors: &[FieldError]) -> Vec<String> {
    errors.iter().map(ToString::to_string).collect()
}

#[test]
fn addresses_are_read_as_gos_lenient_parser_reads_them() {
    assert_eq!(parse_sloppy("10.1.2.3"), Some("10.1.2.3".parse().unwrap()));
    assert_eq!(
        parse_sloppy("010.001.2.3"),
        Some("10.1.2.3".parse().unwrap())
    );
    assert_eq!(
        parse_sloppy("::ffff:010.1.2.3"),
        Some("::ffff:10.1.2.3".parse().unwrap())
    );
    assert_eq!(parse_sloppy("256.1.2.3"), None);
    assert_eq!(parse_sloppy("fe80::1%eth0"), None);
    assert_eq!(parse_sloppy("not-an-ip"), None);
    assert!(is_ipv6("2001:db8::1"));
    assert!(!is_ipv6("::ffff:1.2.3.4"));
    assert!(!is_ipv6("1.2.3.4"));
}

#[test]
fn legacy_ip_fields_refuse_leading_zeros_and_mapped_addresses() {
    assert!(legacy_ip_errors("ip", "10.1.2.3").is_empty());
    assert_eq!(
        messages(&legacy_ip_errors("ip", "010.1.2.3")),
        ["ip: Invalid value: \"010.1.2.3\": must not have leading 0s"]
    );
    assert_eq!(
        messages(&legacy_ip_errors("ip", "::ffff:1.2.3.4")),
        ["ip: Invalid value: \"::ffff:1.2.3.4\": must not be an IPv4-mapped IPv6 address"]
    );
}

#[test]
fn an_endpoints_address_must_be_an_ip_an_endpoint_can_have() {
    let e = json!({"subsets": [{"addresses": [{"ip": "not-an-ip"}], "ports": [{"port": 80, "protocol": "TCP"}]}]});
    assert_eq!(
        messages(&endpoints_errors(&e, None)),
        [
            "subsets[0].addresses[0].ip: Invalid value: \"not-an-ip\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            "subsets[0].addresses[0].ip: Invalid value: \"not-an-ip\": must be a valid IP address",
        ]
    );
    // Unchanged subsets are not checked again on update.
    assert!(endpoints_errors(&e, Some(&e)).is_empty());
    let special =
        json!({"subsets": [{"notReadyAddresses": [{"ip": "127.0.0.1"}, {"ip": "fe80::1"}]}, {}]});
    assert_eq!(
        messages(&endpoints_errors(&special, None)),
        [
            "subsets[0].notReadyAddresses[0].ip: Invalid value: \"127.0.0.1\": may not be in the loopback range (127.0.0.0/8, ::1/128)",
            "subsets[0].notReadyAddresses[1].ip: Invalid value: \"fe80::1\": may not be in the link-local range (169.254.0.0/16, fe80::/10)",
            "subsets[1]: Required value: must specify `addresses` or `notReadyAddresses`",
        ]
    );
}

#[test]
fn endpoints_ports_are_named_when_several_and_have_a_protocol() {
    let e = json!({"subsets": [{"addresses": [{"ip": "10.0.0.1"}],
        "ports": [{"port": 80, "protocol": "TCP"}, {"name": "b", "port": 0, "protocol": "ICMP"}]}]});
    assert_eq!(
        messages(&endpoints_errors(&e, None)),
        [
            "subsets[0].ports[0].name: Required value",
            "subsets[0].ports[1].port: Invalid value: 0: must be between 1 and 65535, inclusive",
            "subsets[0].ports[1].protocol: Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
        ]
    );
}

#[test]
fn non_canonical_ipv6_addresses_are_warned_about() {
    let e = json!({"subsets": [{"addresses": [{"ip": "2001:DB8::0:1"}, {"ip": "10.0.0.1"}]}]});
    assert_eq!(
        endpoints_warnings(&e),
        [
            "subsets[0].addresses[0].ip: IPv6 address \"2001:DB8::0:1\" should be in RFC 5952 canonical format (\"2001:db8::1\")"
        ]
    );
    let mut controller = e.clone();
    controller["metadata"] =
        json!({"labels": {"endpoints.kubernetes.io/managed-by": "endpoint-controller"}});
    assert!(endpoints_warnings(&controller).is_empty());
}

fn service(ip: &str, ips: &[&str], families: &[&str], policy: &str) -> Value {
    json!({"spec": {"clusterIP": ip, "clusterIPs": ips, "ipFamilies": families, "ipFamilyPolicy": policy}})
}

#[test]
fn cluster_ips_must_agree_with_cluster_ip_and_their_families() {
    assert!(
        cluster_ips_errors(
            &service("10.0.0.1", &["10.0.0.1"], &["IPv4"], "SingleStack"),
            None
        )
        .is_empty()
    );
    assert_eq!(
        messages(&cluster_ips_errors(
            &service("10.0.0.1", &["10.0.0.2"], &["IPv6"], "Odd"),
            None
        )),
        [
            "spec.clusterIPs: Invalid value: [\"10.0.0.2\"]: first value must match `clusterIP`",
            "spec.ipFamilyPolicy: Unsupported value: \"Odd\": supported values: \"PreferDualStack\", \"RequireDualStack\", \"SingleStack\"",
            "spec.clusterIPs[0]: Invalid value: \"10.0.0.2\": expected an IPv6 value as indicated by `ipFamilies[0]`",
        ]
    );
    assert_eq!(
        messages(&cluster_ips_errors(
            &service(
                "10.0.0.1",
                &["10.0.0.1", "10.0.0.2"],
                &[],
                "RequireDualStack"
            ),
            None
        )),
        [
            "spec.clusterIPs: Invalid value: [\"10.0.0.1\",\"10.0.0.2\"]: may specify no more than one IP for each IP family"
        ]
    );
}

#[test]
fn an_update_may_not_change_the_primary_cluster_ip_or_family() {
    let old = service("10.0.0.1", &["10.0.0.1"], &["IPv4"], "SingleStack");
    assert!(service_update_errors(&old, &old).is_empty());
    let moved = service("10.0.0.2", &["10.0.0.2"], &["IPv4"], "SingleStack");
    assert_eq!(
        messages(&service_update_errors(&moved, &old)),
        ["spec.clusterIPs[0]: Invalid value: [\"10.0.0.2\"]: may not change once set"]
    );
    let dual = service(
        "10.0.0.1",
        &["10.0.0.1", "fd00::1"],
        &["IPv4", "IPv6"],
        "RequireDualStack",
    );
    let released = service("10.0.0.1", &["10.0.0.1"], &["IPv4"], "RequireDualStack");
    assert_eq!(
        messages(&service_update_errors(&released, &dual)),
        [
            "spec.ipFamilyPolicy: Invalid value: \"RequireDualStack\": must be set to 'SingleStack' when releasing the secondary clusterIP",
            "spec.ipFamilyPolicy: Invalid value: \"RequireDualStack\": must be set to 'SingleStack' when releasing the secondary ipFamily",
        ]
    );
    let headless = service("None", &["None"], &["IPv4", "IPv6"], "RequireDualStack");
    assert!(service_update_errors(&headless, &headless).is_empty());
}
