//! Plain HTTP/1.1 requests to the servers the agent starts (metrics, probes, status page,
//! webhooks): one request per connection, the answer read whole.

use std::io::{Read, Write};
use std::time::Duration;

/// One GET of `path` on `addr`: the response head and body.
pub fn get(addr: &str, path: &str) -> std::io::Result<(String, String)> {
    let mut stream = std::net::TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n"
    )?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    Ok((head.to_string(), body.to_string()))
}

/// One POST: the status code and the body of the answer. With `Expect: 100-continue` the body is
/// sent only if the server asks for it (as curl does for large bodies).
pub fn post(addr: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> (u16, String) {
    let mut stream = std::net::TcpStream::connect(addr).expect("connect to the webhook server");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("a timeout");
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head += &format!("{name}: {value}\r\n");
    }
    head += "\r\n";
    stream.write_all(head.as_bytes()).expect("send the head");
    let expect_continue = headers
        .iter()
        .any(|(n, v)| n.eq_ignore_ascii_case("expect") && *v == "100-continue");
    if !expect_continue {
        stream.write_all(body).expect("send the body");
    }
    let mut response = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => response.extend_from_slice(&buf[..n]),
            Err(e) => panic!("reading the answer: {e}"),
        }
        if expect_continue && response.starts_with(b"HTTP/1.1 100") {
            panic!("the server asked for the body it should refuse");
        }
    }
    let text = String::from_utf8_lossy(&response).into_owned();
    let status = text
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {text:?}"));
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    (status, body.to_string())
}
