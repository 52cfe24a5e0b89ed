//! Bundles in S3-compatible object storage, through `object_store`.
//!
//! The store's callers are sync (the gate's commands, the retry history,
//! the ledger verifier's rayon workers), so each store owns a small
//! runtime and blocks on it: inside the gate's multi-thread runtime
//! through `block_in_place`, on a scoped thread inside a current-thread
//! runtime, and directly from any other thread (many at once when the
//! ledger verifier fetches in parallel).
//!
//! Every request is bounded: a few quick retries, a connect timeout and an
//! overall deadline, so a store that is down is reported within seconds
//! rather than after object_store's default three minutes of retries.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use object_store::aws::{AmazonS3, AmazonS3Builder, AmazonS3ConfigKey};
use object_store::path::Path as ObjectPath;
use object_store::{BackoffConfig, ClientOptions, ObjectStore, PutMode, PutPayload, RetryConfig};
use tokio::runtime::{Builder, Handle, Runtime, RuntimeFlavor};

use super::error::StoreError;
use super::reference::BundleRef;
use crate::bundle;

/// How long one store operation may take in all, retries included.
const OPERATION_TIMEOUT: Duration = Duration::from_secs(90);
/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// The `AWS_*` settings object storage is reached with (credentials,
/// region, endpoint, `AWS_ALLOW_HTTP`…), as the gate's configuration read
/// them: names as in the environment, values as given.
#[derive(Clone, Default)]
pub struct AwsSettings {
    vars: Vec<(String, String)>,
}

impl AwsSettings {
    /// Settings from `(name, value)` pairs such as `("AWS_REGION", "eu-west-1")`;
    /// names `object_store` does not know are ignored, as the AWS tools do.
    pub fn from_vars(vars: impl IntoIterator<Item = (String, String)>) -> Self {
        Self {
            vars: vars
                .into_iter()
                .filter(|(name, _)| name.starts_with("AWS_"))
                .collect(),
        }
    }

    /// The value of one setting.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

impl fmt::Debug for AwsSettings {
    // Names only: the values include secrets.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.vars.iter().map(|(n, _)| n))
            .finish()
    }
}

/// Object access: one client per bucket, made on first use, and the
/// runtime their requests run on.
#[derive(Debug)]
pub(super) struct Objects {
    aws: AwsSettings,
    runtime: OnceLock<Result<Runtime, String>>,
    clients: Mutex<HashMap<String, Arc<AmazonS3>>>,
}

impl Objects {
    pub(super) fn new(aws: AwsSettings) -> Self {
        Self {
            aws,
            runtime: OnceLock::new(),
            clients: Mutex::new(HashMap::new()),
        }
    }

    /// Writes `bytes` at `at` unless an object is there; an object already
    /// there must hold these very bytes (its name is their sha256).
    pub(super) fn put_if_absent(&self, at: &BundleRef, bytes: &[u8]) -> Result<(), StoreError> {
        let (client, path) = self.locate(at)?;
        let payload = PutPayload::from(bytes.to_vec());
        let put = self.run(at, async move {
            client
                .put_opts(&path, payload, PutMode::Create.into())
                .await
        })?;
        match put {
            Ok(_) => Ok(()),
            Err(object_store::Error::AlreadyExists { .. }) => {
                let there = self.get(at)?;
                if there == bytes {
                    Ok(())
                } else {
                    Err(StoreError::Tampered {
                        at: at.to_string(),
                        expected: bundle::digest(bytes),
                        actual: bundle::digest(&there),
                    })
                }
            }
            Err(e) => Err(failed(at, &e)),
        }
    }

    /// The object's bytes.
    pub(super) fn get(&self, at: &BundleRef) -> Result<Vec<u8>, StoreError> {
        let (client, path) = self.locate(at)?;
        let got = self.run(at, async move {
            match client.get(&path).await {
                Ok(result) => result.bytes().await,
                Err(e) => Err(e),
            }
        })?;
        got.map(|b| b.to_vec()).map_err(|e| failed(at, &e))
    }

    /// The client for `at`'s bucket and the object's path in it.
    fn locate(&self, at: &BundleRef) -> Result<(Arc<AmazonS3>, ObjectPath), StoreError> {
        let BundleRef::Object { bucket, key } = at else {
            return Err(StoreError::Invalid(format!("{at} is not an object")));
        };
        let path = ObjectPath::parse(key)
            .map_err(|e| StoreError::Invalid(format!("{at} is not a usable object key: {e}")))?;
        Ok((self.client(bucket)?, path))
    }

    fn client(&self, bucket: &str) -> Result<Arc<AmazonS3>, StoreError> {
        let mut clients = self.clients.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(client) = clients.get(bucket) {
            return Ok(Arc::clone(client));
        }
        let mut builder = AmazonS3Builder::new()
            .with_bucket_name(bucket)
            .with_retry(RetryConfig {
                backoff: BackoffConfig {
                    init_backoff: Duration::from_millis(100),
                    max_backoff: Duration::from_secs(2),
                    base: 2.0,
                },
                max_retries: 3,
                retry_timeout: Duration::from_secs(20),
            })
            .with_client_options(
                ClientOptions::new()
                    .with_connect_timeout(CONNECT_TIMEOUT)
                    .with_timeout(REQUEST_TIMEOUT),
            );
        for (name, value) in &self.aws.vars {
            match name.to_ascii_lowercase().parse::<AmazonS3ConfigKey>() {
                // The bucket is the one the store or the row names.
                Ok(AmazonS3ConfigKey::Bucket) | Err(_) => {}
                Ok(key) => builder = builder.with_config(key, value),
            }
        }
        let client = Arc::new(builder.build().map_err(|e| {
            StoreError::Invalid(format!("cannot set up access to s3://{bucket}: {e}"))
        })?);
        clients.insert(bucket.to_owned(), Arc::clone(&client));
        Ok(client)
    }

    /// Runs `fut` to completion from sync code, wherever that code runs,
    /// within [`OPERATION_TIMEOUT`].
    fn run<F>(&self, at: &BundleRef, fut: F) -> Result<F::Output, StoreError>
    where
        F: Future + Send,
        F::Output: Send,
    {
        let rt = self
            .runtime
            .get_or_init(|| {
                Builder::new_multi_thread()
                    .worker_threads(2)
                    .thread_name("gate-store")
                    .enable_all()
                    .build()
                    .map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(|reason| StoreError::Unavailable {
                at: at.to_string(),
                reason: format!("cannot start the store's runtime: {reason}"),
            })?;
        let bounded = async { tokio::time::timeout(OPERATION_TIMEOUT, fut).await };
        let result = match Handle::try_current().map(|h| h.runtime_flavor()) {
            Err(_) => rt.block_on(bounded),
            Ok(RuntimeFlavor::CurrentThread) => std::thread::scope(|s| {
                s.spawn(|| rt.block_on(bounded))
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            }),
            Ok(_) => tokio::task::block_in_place(|| rt.block_on(bounded)),
        };
        result.map_err(|_| StoreError::Unavailable {
            at: at.to_string(),
            reason: format!("no answer within {} s", OPERATION_TIMEOUT.as_secs()),
        })
    }
}

impl Drop for Objects {
    fn drop(&mut self) {
        // Dropping a runtime blocks, which panics inside another runtime;
        // its connections need no orderly goodbye.
        if let Some(Ok(rt)) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// What a failed request means for the bundle at `at`.
fn failed(at: &BundleRef, e: &object_store::Error) -> StoreError {
    match e {
        object_store::Error::NotFound { .. } => StoreError::Missing { at: at.to_string() },
        other => StoreError::Unavailable {
            at: at.to_string(),
            reason: other.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_keep_aws_names_and_never_show_values() {
        let aws = AwsSettings::from_vars([
            ("AWS_REGION".to_owned(), "eu-west-1".to_owned()),
            (
                "AWS_SECRET_ACCESS_KEY".to_owned(),
                "s3cr3t-value".to_owned(),
            ),
            ("HOME".to_owned(), "/root".to_owned()),
        ]);
        assert_eq!(aws.get("AWS_REGION"), Some("eu-west-1"));
        assert_eq!(aws.get("HOME"), None);
        let shown = format!("{aws:?}");
        assert!(shown.contains("AWS_SECRET_ACCESS_KEY"), "{shown}");
        assert!(!shown.contains("s3cr3t"), "{shown}");
    }

    #[test]
    fn a_store_that_is_down_is_unavailable_within_seconds() {
        // A loopback port nobody listens on.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap();
        let objects = Objects::new(AwsSettings::from_vars([
            ("AWS_ACCESS_KEY_ID".to_owned(), "test".to_owned()),
            ("AWS_SECRET_ACCESS_KEY".to_owned(), "test".to_owned()),
            ("AWS_REGION".to_owned(), "us-east-1".to_owned()),
            (
                "AWS_ENDPOINT_URL".to_owned(),
                format!("http://127.0.0.1:{port}"),
            ),
            ("AWS_ALLOW_HTTP".to_owned(), "true".to_owned()),
        ]));
        let at = BundleRef::Object {
            bucket: "gate-bundles".into(),
            key: format!("p/{}.dsse.json", "0".repeat(64)),
        };
        let started = std::time::Instant::now();
        let err = objects.get(&at).unwrap_err();
        assert!(err.is_unavailable(), "{err}");
        let err = objects.put_if_absent(&at, b"x").unwrap_err();
        assert!(err.is_unavailable(), "{err}");
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{:?}",
            started.elapsed()
        );
    }
}
