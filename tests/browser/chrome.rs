//! Debian's `chromium`, driven through `chromedriver` (WebDriver) with fantoccini: the driver on a
//! port of its own choosing, headless sessions with or without JavaScript, each on a fresh profile.

use fantoccini::wd::Capabilities;
use fantoccini::{Client, ClientBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::json;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::channel;
use std::time::Duration;

/// The browser the tests drive (Debian's `chromium` package).
pub const CHROMIUM: &str = "/usr/bin/chromium";
/// With this set to `1` (CI sets it), a missing browser fails the test instead of skipping it.
pub const REQUIRE_ENV: &str = "ARO_GITOPS_REQUIRE_BROWSER";
/// How long chromedriver may take to say it listens.
const START_DEADLINE: Duration = Duration::from_secs(20);
/// The browser window: wide enough for the page's table, tall enough for both clusters.
const WINDOW_SIZE: &str = "--window-size=1440,900";

/// `chromedriver` on `PATH` and `chromium` at [`CHROMIUM`], or what is missing.
pub fn find() -> Result<PathBuf, String> {
    let driver = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .map(|dir| dir.join("chromedriver"))
        .find(|p| p.is_file());
    match (driver, Path::new(CHROMIUM).is_file()) {
        (Some(driver), true) => Ok(driver),
        (None, _) => Err("chromedriver is not on PATH (Debian: chromium-driver)".into()),
        (Some(_), false) => Err(format!("{CHROMIUM} is missing (Debian: chromium)")),
    }
}

/// The driver when the browser is installed; `None` (the test skips, saying why) when it is not
/// and [`REQUIRE_ENV`] is not set; a failure when it is.
pub fn driver_or_skip(test: &str) -> Option<Driver> {
    match find() {
        Ok(path) => Some(Driver::start(&path)),
        Err(why) => {
            assert!(
                std::env::var(REQUIRE_ENV).as_deref() != Ok("1"),
                "{REQUIRE_ENV}=1 but {why}"
            );
            eprintln!("skipping {test}: {why} (set {REQUIRE_ENV}=1 to require it)");
            None
        }
    }
}

/// A running `chromedriver` (its own process group: dropping it ends it and every browser it
/// started, even when a test panics before closing its sessions).
pub struct Driver {
    child: Child,
    /// The WebDriver endpoint, `http://127.0.0.1:PORT`.
    pub url: String,
    /// The sessions' profiles (`--user-data-dir`), removed with the driver.
    profiles: tempfile::TempDir,
}

impl Driver {
    fn start(path: &Path) -> Driver {
        use std::os::unix::process::CommandExt;
        let mut child = Command::new(path)
            .arg("--port=0")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("chromedriver starts");
        let stdout = child.stdout.take().expect("piped");
        let (tx, rx) = channel();
        // Reads every line (a full pipe would stall the driver); the port goes to the test.
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
            {
                if let Some(port) = line
                    .split_once("started successfully on port ")
                    .and_then(|(_, rest)| rest.trim_end_matches('.').parse::<u16>().ok())
                {
                    let _ = tx.send(port);
                }
            }
        });
        let port = rx
            .recv_timeout(START_DEADLINE)
            .expect("chromedriver says which port it listens on");
        Driver {
            child,
            url: format!("http://127.0.0.1:{port}"),
            profiles: tempfile::tempdir().expect("tempdir"),
        }
    }

    /// A new headless session on a fresh profile, with JavaScript on or off.
    pub async fn session(&self, javascript: bool) -> Client {
        let profile = tempfile::Builder::new()
            .prefix("profile-")
            .tempdir_in(self.profiles.path())
            .expect("a profile folder")
            .keep();
        let mut options = json!({
            "binary": CHROMIUM,
            "args": [
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--hide-scrollbars",
                WINDOW_SIZE,
                format!("--user-data-dir={}", profile.display()),
            ],
        });
        if !javascript {
            options["prefs"] = json!({"profile.managed_default_content_settings.javascript": 2});
        }
        let mut caps = Capabilities::new();
        caps.insert("browserName".into(), json!("chrome"));
        caps.insert("goog:chromeOptions".into(), options);
        ClientBuilder::new(HttpConnector::new())
            .capabilities(caps)
            .connect(&self.url)
            .await
            .expect("a chromium session starts")
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        // The whole group: chromedriver and the browsers it started.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
