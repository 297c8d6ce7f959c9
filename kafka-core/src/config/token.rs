//! The application's OAUTHBEARER token source ([`TokenProvider`]) and the tokens it returns,
//! which `security.token_provider` holds; the SASL exchange that sends them is in `sasl`.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;

use super::Secret;

/// What a [`TokenProvider`] returns: a future the driver awaits (the core never polls it).
pub type TokenFuture =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<OAuthToken, String>> + Send>>;

/// The application's OAUTHBEARER token source (Java's login callback handler), for
/// `security.token_provider`: asked for a token whenever a connection needs one and the last
/// has expired; async, so it may call an identity provider. An `Err` names why, and fails what
/// waits on the connection as an authentication failure.
#[derive(Clone)]
pub struct TokenProvider(std::sync::Arc<dyn Fn() -> TokenFuture + Send + Sync>);

impl TokenProvider {
    /// A provider from a function returning the token's future.
    pub fn new(f: impl Fn() -> TokenFuture + Send + Sync + 'static) -> Self {
        TokenProvider(std::sync::Arc::new(f))
    }

    /// Starts fetching a token.
    pub fn fetch(&self) -> TokenFuture {
        (self.0)()
    }
}

impl std::fmt::Debug for TokenProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenProvider")
    }
}

/// An OAUTHBEARER token and when it expires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthToken {
    /// The compact-serialized token (never printed).
    pub value: Secret,
    /// When it expires, in milliseconds since the Unix epoch.
    pub expires_at_ms: i64,
}

impl OAuthToken {
    /// An unsecured JWS (`alg: none`) for `subject`, as Kafka's unsecured validator accepts
    /// (for tests and development only), issued at `now_ms` and valid for `lifetime_s`.
    pub fn unsecured(subject: &str, now_ms: i64, lifetime_s: u64) -> OAuthToken {
        let iat = now_ms / 1000;
        let exp = iat.saturating_add(i64::try_from(lifetime_s).unwrap_or(i64::MAX / 2));
        let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none"}"#);
        let subject = subject.replace('\\', "\\\\").replace('"', "\\\"");
        let claims =
            URL_SAFE_NO_PAD.encode(format!(r#"{{"iat":{iat},"exp":{exp},"sub":"{subject}"}}"#));
        OAuthToken {
            value: Secret::new(format!("{header}.{claims}.")),
            expires_at_ms: exp.saturating_mul(1000),
        }
    }
}
