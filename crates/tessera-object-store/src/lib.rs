//! Tessera arrays and groups on cloud object stores: the
//! [`Storage`](tessera_storage::Storage) trait over the [`object_store`] crate (Amazon S3
//! and S3-compatible stores by default; Google Cloud Storage, Azure Blob Storage and
//! read-only HTTP behind the `gcp`, `azure` and `http` features).
//!
//! [`ObjectStoreStorage::from_uri`] makes a storage rooted at a URI such as
//! `s3://bucket/path/to/array`, configured from the standard environment variables
//! (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ENDPOINT_URL`,
//! `AWS_ALLOW_HTTP`, `AWS_VIRTUAL_HOSTED_STYLE_REQUEST`, and the `GOOGLE_*` / `AZURE_*`
//! ones), with retries and exponential backoff ([`retry_config`]). Hand it to the engine as
//! an `Arc<dyn Storage>`:
//!
//! ```no_run
//! use std::sync::Arc;
//! use tessera::{Array, Storage};
//! use tessera_object_store::ObjectStoreStorage;
//!
//! // AWS_ENDPOINT_URL=http://127.0.0.1:9000 AWS_ALLOW_HTTP=true ... for a local emulator
//! let storage: Arc<dyn Storage> = Arc::new(ObjectStoreStorage::from_uri("s3://bucket/arrays/dense")?);
//! let array = Array::open(storage)?;
//! let result = array.read().range_i64("rows", 1, 10).execute()?;
//! println!("{} cells", result.cell_num());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Any other [`ObjectStore`] (an in-memory one, a store wrapped
//! in object_store's throttling or limiting layers) works through
//! [`ObjectStoreStorage::new`]. The trait is synchronous and object_store is async: every
//! request runs on a tokio runtime this crate owns, on threads of its own, so the storage is
//! usable from any thread, including from inside another tokio runtime (`spawn_blocking`
//! or worker threads), where `Handle::block_on` would panic.

use std::sync::Arc;
#[cfg(any(feature = "aws", feature = "gcp", feature = "azure", feature = "http"))]
use std::time::Duration;

use object_store::ObjectStore;
#[cfg(any(feature = "aws", feature = "gcp", feature = "azure", feature = "http"))]
use object_store::{BackoffConfig, RetryConfig};

mod runtime;
mod storage;
mod writer;

#[cfg(feature = "testing")]
pub mod emulator;

pub use object_store;
pub use storage::ObjectStoreStorage;

/// Shorthand for results whose error is [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a storage could not be made from a URI.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The URI is not one this crate understands (no `scheme://`, no bucket, a `..`).
    #[error("{uri}: invalid object-store URI: {reason}")]
    InvalidUri {
        /// The URI as given.
        uri: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The scheme names a store whose Cargo feature is off, or no store at all.
    #[error("{uri}: the {scheme}:// scheme is not supported by this build{hint}")]
    UnsupportedScheme {
        /// The URI as given.
        uri: String,
        /// Its scheme.
        scheme: String,
        /// Which feature would add it, if any.
        hint: &'static str,
    },
    /// object_store refused the configuration (missing credentials, a bad endpoint, ...).
    #[error("{uri}: cannot configure the object store")]
    Store {
        /// The URI as given.
        uri: String,
        /// object_store's error.
        #[source]
        source: object_store::Error,
    },
}

/// Whether `arg` is an object-store URI this crate would try to open (`s3://`, `s3a://`,
/// `gs://`, `az://`, `abfs(s)://`, `adl://`, `azure://`, `http(s)://`), as opposed to a
/// local path (or a `file://` URI).
#[must_use]
pub fn is_object_store_uri(arg: &str) -> bool {
    scheme_of(arg).is_some_and(|s| {
        matches!(
            s.as_str(),
            "s3" | "s3a" | "gs" | "az" | "abfs" | "abfss" | "adl" | "azure" | "http" | "https"
        )
    })
}

fn scheme_of(arg: &str) -> Option<String> {
    let (scheme, _) = arg.split_once("://")?;
    let valid = !scheme.is_empty()
        && scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    valid.then(|| scheme.to_ascii_lowercase())
}

/// The retries every store made by [`ObjectStoreStorage::from_uri`] uses: up to 10 retries
/// of failed or throttled requests, backing off exponentially from 100 ms to 15 s, for at
/// most 3 minutes in all (object_store's defaults, spelled out so they are ours).
#[cfg(any(feature = "aws", feature = "gcp", feature = "azure", feature = "http"))]
#[must_use]
pub fn retry_config() -> RetryConfig {
    RetryConfig {
        backoff: BackoffConfig {
            init_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(15),
            base: 2.0,
        },
        max_retries: 10,
        retry_timeout: Duration::from_secs(180),
    }
}

impl ObjectStoreStorage {
    /// A storage rooted at `uri` (`s3://bucket/prefix`, `gs://bucket/prefix`,
    /// `az://container/prefix`, `http(s)://host/prefix`), configured from the environment
    /// as the crate documentation says. Does no I/O.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidUri`] for a URI without a bucket or with a `..` component,
    /// [`Error::UnsupportedScheme`] when the scheme's feature is off, [`Error::Store`] when
    /// object_store refuses the configuration.
    pub fn from_uri(uri: &str) -> Result<Self> {
        Self::from_uri_with(uri, std::iter::empty::<(String, String)>())
    }

    /// As [`from_uri`](ObjectStoreStorage::from_uri), with object_store configuration keys
    /// applied over the environment (`("aws_endpoint", "http://127.0.0.1:9000")`,
    /// `("aws_allow_http", "true")`, ...: the lowercase names of the variables). Unknown keys
    /// are an error.
    ///
    /// # Errors
    ///
    /// As [`from_uri`](ObjectStoreStorage::from_uri), and [`Error::Store`] for an unknown key.
    pub fn from_uri_with<K, V>(uri: &str, options: impl IntoIterator<Item = (K, V)>) -> Result<Self>
    where
        K: AsRef<str>,
        V: Into<String>,
    {
        let invalid =
            |reason: &str| Error::InvalidUri { uri: uri.to_owned(), reason: reason.to_owned() };
        let Some(scheme) = scheme_of(uri) else {
            return Err(invalid("expected scheme://bucket/path"));
        };
        let rest = &uri[scheme.len() + 3..];
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err(invalid("the bucket (or host) is missing"));
        }
        let options: Vec<(String, String)> =
            options.into_iter().map(|(k, v)| (k.as_ref().to_ascii_lowercase(), v.into())).collect();
        let store = build_store(uri, &scheme, bucket, &options)?;
        let display = format!("{scheme}://{bucket}/{}", prefix.trim_matches('/'));
        ObjectStoreStorage::new(store, prefix, display.trim_end_matches('/'))
    }
}

/// The store for `scheme://bucket` (the prefix is the storage's business).
fn build_store(
    uri: &str,
    scheme: &str,
    bucket: &str,
    options: &[(String, String)],
) -> Result<Arc<dyn ObjectStore>> {
    let store_error = |source| Error::Store { uri: uri.to_owned(), source };
    let unsupported =
        |hint| Error::UnsupportedScheme { uri: uri.to_owned(), scheme: scheme.to_owned(), hint };
    let _ = (&store_error, bucket, options);
    // HTTPS goes through rustls on ring: make it the process default unless another crypto
    // provider already is.
    #[cfg(feature = "cloud")]
    let _ = rustls::crypto::ring::default_provider().install_default();
    match scheme {
        "s3" | "s3a" => {
            #[cfg(feature = "aws")]
            {
                let mut builder = object_store::aws::AmazonS3Builder::from_env();
                for (k, v) in options {
                    let key: object_store::aws::AmazonS3ConfigKey =
                        k.parse().map_err(store_error)?;
                    builder = builder.with_config(key, v.clone());
                }
                let store = builder
                    .with_bucket_name(bucket)
                    .with_retry(retry_config())
                    .build()
                    .map_err(store_error)?;
                Ok(Arc::new(store))
            }
            #[cfg(not(feature = "aws"))]
            Err(unsupported(" (enable the `aws` feature)"))
        }
        "gs" => {
            #[cfg(feature = "gcp")]
            {
                let mut builder = object_store::gcp::GoogleCloudStorageBuilder::from_env();
                for (k, v) in options {
                    let key: object_store::gcp::GoogleConfigKey = k.parse().map_err(store_error)?;
                    builder = builder.with_config(key, v.clone());
                }
                let store = builder
                    .with_bucket_name(bucket)
                    .with_retry(retry_config())
                    .build()
                    .map_err(store_error)?;
                Ok(Arc::new(store))
            }
            #[cfg(not(feature = "gcp"))]
            Err(unsupported(" (enable the `gcp` feature)"))
        }
        "az" | "abfs" | "abfss" | "adl" | "azure" => {
            #[cfg(feature = "azure")]
            {
                let mut builder = object_store::azure::MicrosoftAzureBuilder::from_env();
                for (k, v) in options {
                    let key: object_store::azure::AzureConfigKey =
                        k.parse().map_err(store_error)?;
                    builder = builder.with_config(key, v.clone());
                }
                let store = builder
                    .with_container_name(bucket)
                    .with_retry(retry_config())
                    .build()
                    .map_err(store_error)?;
                Ok(Arc::new(store))
            }
            #[cfg(not(feature = "azure"))]
            Err(unsupported(" (enable the `azure` feature)"))
        }
        "http" | "https" => {
            #[cfg(feature = "http")]
            {
                let mut builder = object_store::http::HttpBuilder::new();
                for (k, v) in options {
                    let key: object_store::ClientConfigKey = k.parse().map_err(store_error)?;
                    builder = builder.with_config(key, v.clone());
                }
                let store = builder
                    .with_url(format!("{scheme}://{bucket}"))
                    .with_retry(retry_config())
                    .build()
                    .map_err(store_error)?;
                Ok(Arc::new(store))
            }
            #[cfg(not(feature = "http"))]
            Err(unsupported(" (enable the `http` feature)"))
        }
        _ => Err(unsupported("")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris() {
        assert!(is_object_store_uri("s3://b/x"));
        assert!(is_object_store_uri("GS://b"));
        assert!(!is_object_store_uri("file:///tmp/x"));
        assert!(!is_object_store_uri("/tmp/x"));
        assert!(!is_object_store_uri("data/a://b"));
        let err = ObjectStoreStorage::from_uri("s3:///x").unwrap_err();
        assert!(matches!(err, Error::InvalidUri { .. }), "{err}");
        let err = ObjectStoreStorage::from_uri("ftp://host/x").unwrap_err();
        assert!(matches!(err, Error::UnsupportedScheme { .. }), "{err}");
        let err = ObjectStoreStorage::from_uri("s3://bucket/a/../b").unwrap_err();
        assert!(matches!(err, Error::InvalidUri { .. }), "{err}");
    }

    #[cfg(feature = "aws")]
    #[test]
    fn s3_uri_roots() {
        let s = ObjectStoreStorage::from_uri("s3://bucket/a/b/").unwrap();
        assert_eq!(s.uri(), "s3://bucket/a/b");
        let s = ObjectStoreStorage::from_uri("s3://bucket").unwrap();
        assert_eq!(s.uri(), "s3://bucket");
        assert_eq!(s.child("x/y").unwrap().uri(), "s3://bucket/x/y");
        // HTTPS clients build: rustls has its crypto provider (ring).
        let s = ObjectStoreStorage::from_uri_with(
            "s3://bucket/x",
            [("aws_endpoint", "https://127.0.0.1:1"), ("aws_region", "eu-west-1")],
        )
        .unwrap();
        assert_eq!(s.uri(), "s3://bucket/x");
        assert!(ObjectStoreStorage::from_uri_with("s3://b/x", [("no_such_key", "1")]).is_err());
    }
}
