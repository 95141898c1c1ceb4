//! Who may use the page: whoever holds this start's token. The URL rawko prints carries it once;
//! the first visit trades it for an HttpOnly, `SameSite=Strict` cookie and a redirect that takes
//! it out of the address bar. Every request must bring the cookie, and a request that changes
//! something must also come from the page itself (its `Origin`).

use std::io::Read;

/// The cookie that carries the token.
pub const COOKIE: &str = "rawko_token";

/// A new random token: 32 bytes from the kernel, as 64 hex digits.
pub fn new_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Whether `given` is `token`, compared in constant time (a wrong guess says nothing of how
/// much of it was right).
pub fn same(given: &str, token: &str) -> bool {
    let (a, b) = (given.as_bytes(), token.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The token of a `Cookie` header, if it carries ours.
pub fn cookie_token(header: &str) -> Option<&str> {
    header
        .split(';')
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.trim_matches('"'))
}

/// The `token` of a query string, if it has one.
pub fn query_token(query: &str) -> Option<&str> {
    query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(name, _)| *name == "token")
        .map(|(_, value)| value)
}

/// The `Set-Cookie` value that gives the browser the token.
pub fn set_cookie(token: &str, secure: bool) -> String {
    format!(
        "{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/{}",
        if secure { "; Secure" } else { "" }
    )
}

/// Whether a state-changing request comes from the page: its `Origin` is the scheme and the
/// `Host` the request was sent to. A request without `Origin` is refused: browsers send it with
/// every POST, and a client that is not a browser can send it too.
pub fn same_origin(origin: Option<&str>, host: Option<&str>, secure: bool) -> bool {
    let (Some(origin), Some(host)) = (origin, host) else {
        return false;
    };
    let scheme = if secure { "https://" } else { "http://" };
    origin
        .strip_prefix(scheme)
        .is_some_and(|rest| rest.eq_ignore_ascii_case(host))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_long_random_and_differ() {
        let (a, b) = (new_token().unwrap(), new_token().unwrap());
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
    }

    #[test]
    fn only_the_same_token_is_the_same() {
        assert!(same("abc", "abc"));
        assert!(!same("abd", "abc"));
        assert!(!same("ab", "abc"));
        assert!(!same("", "abc"));
    }

    #[test]
    fn the_cookie_and_the_query_are_read_by_name() {
        assert_eq!(cookie_token("a=1; rawko_token=xyz; b=2"), Some("xyz"));
        assert_eq!(cookie_token("rawko_tokenx=1"), None);
        assert_eq!(query_token("a=1&token=t0k"), Some("t0k"));
        assert_eq!(query_token("tokens=1"), None);
    }

    #[test]
    fn the_origin_must_be_the_host_the_request_went_to() {
        assert!(same_origin(
            Some("http://127.0.0.1:8080"),
            Some("127.0.0.1:8080"),
            false
        ));
        assert!(!same_origin(
            Some("http://evil.example"),
            Some("127.0.0.1:8080"),
            false
        ));
        assert!(!same_origin(
            Some("https://127.0.0.1:8080"),
            Some("127.0.0.1:8080"),
            false
        ));
        assert!(!same_origin(None, Some("127.0.0.1:8080"), false));
        assert!(!same_origin(Some("null"), Some("127.0.0.1:8080"), false));
    }
}
