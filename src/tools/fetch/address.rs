//! Which network addresses `fetch` refuses to reach unless a rule names the host: anything that
//! is not the public internet (this machine, the local network, the cloud's metadata service).
//! Pure: it classifies an address and knows nothing of names, rules or sockets.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why `ip` is not a public address, or `None` when it is one.
pub(crate) fn refused(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => refused_v4(v4),
        IpAddr::V6(v6) => refused_v6(v6),
    }
}

fn refused_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = ip.octets();
    if ip.is_unspecified() || a == 0 {
        Some("an unspecified address")
    } else if ip.is_loopback() {
        Some("a loopback address")
    } else if ip.is_link_local() {
        Some("a link-local address (cloud metadata services live there)")
    } else if ip.is_private() {
        Some("a private network address")
    } else if a == 100 && (64..128).contains(&b) {
        Some("a shared (carrier-grade NAT) address")
    } else if ip.is_multicast() || ip.is_broadcast() || a >= 240 {
        Some("a multicast, broadcast or reserved address")
    } else if (a, b) == (192, 0) && ip.octets()[2] == 0 {
        Some("an IETF protocol address")
    } else {
        None
    }
}

fn refused_v6(ip: Ipv6Addr) -> Option<&'static str> {
    // An IPv4 address written as IPv6 (`::ffff:127.0.0.1`, or the old `::127.0.0.1`) reaches
    // the IPv4 host: judge that one.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return refused_v4(v4);
    }
    let segments = ip.segments();
    if segments[..6] == [0; 6] && !ip.is_loopback() && !ip.is_unspecified() {
        return refused_v4(Ipv4Addr::from_bits(ip.to_bits() as u32));
    }
    let first = segments[0];
    if ip.is_unspecified() {
        Some("an unspecified address")
    } else if ip.is_loopback() {
        Some("a loopback address")
    } else if first & 0xffc0 == 0xfe80 {
        Some("a link-local address")
    } else if first & 0xfe00 == 0xfc00 {
        Some("a private network address (unique local)")
    } else if first & 0xffc0 == 0xfec0 {
        Some("a private network address (site-local)")
    } else if ip.is_multicast() {
        Some("a multicast address")
    } else if first == 0x2002 {
        // 6to4 embeds an IPv4 address in the next 32 bits.
        refused_v4(Ipv4Addr::new(
            (segments[1] >> 8) as u8,
            segments[1] as u8,
            (segments[2] >> 8) as u8,
            segments[2] as u8,
        ))
    } else if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        // NAT64 reaches the IPv4 address in the last 32 bits.
        refused_v4(Ipv4Addr::from_bits(ip.to_bits() as u32))
    } else {
        None
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a test's failure is its panic
mod tests {
    use super::*;

    fn judged(text: &str) -> Option<&'static str> {
        refused(text.parse().unwrap())
    }

    #[test]
    fn public_addresses_pass() {
        for ok in [
            "93.184.216.34",
            "1.1.1.1",
            "2606:4700::1111",
            "100.128.0.1",
            "172.32.0.1",
        ] {
            assert_eq!(judged(ok), None, "{ok}");
        }
    }

    #[test]
    fn private_loopback_link_local_and_the_rest_are_refused() {
        for bad in [
            "127.0.0.1",
            "127.8.9.10",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.255",
            "0.0.0.0",
            "0.1.2.3",
            "224.0.0.1",
            "255.255.255.255",
            "240.0.0.1",
            "::",
            "::1",
            "fe80::1",
            "fc00::1",
            "fd12:3456::1",
            "ff02::1",
        ] {
            assert!(judged(bad).is_some(), "{bad} should be refused");
        }
    }

    #[test]
    fn ipv4_hidden_in_ipv6_is_judged_as_ipv4() {
        for bad in [
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
            "2002:7f00:1::",
            "64:ff9b::a9fe:a9fe",
        ] {
            assert!(judged(bad).is_some(), "{bad} should be refused");
        }
        assert_eq!(judged("::ffff:93.184.216.34"), None);
    }

    #[test]
    fn the_metadata_service_is_named_link_local() {
        assert!(judged("169.254.169.254").unwrap().contains("link-local"));
    }
}
