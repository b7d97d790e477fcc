//! The real binary's desktop workbench under Xvfb: `rocescope gui --sim
//! teaching-basic` opens a window, a screenshot of the X screen is taken
//! (ImageMagick's `import`) and must not be blank (many distinct colours).
//! The screenshot is kept at target/gui-smoke.png for the README.
//! Skipped where xvfb-run or import is missing, unless
//! ROCESCOPE_REQUIRE_XVFB is set (as in .ci/run).
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::Command;

fn have(cmd: &str, arg: &str) -> bool {
    Command::new(cmd).arg(arg).output().is_ok()
}

#[test]
fn gui_under_xvfb_draws_a_non_blank_window() {
    if !have("xvfb-run", "--help") || !have("import", "-version") || !have("identify", "-version") {
        assert!(
            std::env::var_os("ROCESCOPE_REQUIRE_XVFB").is_none(),
            "xvfb-run and ImageMagick are required here but not installed"
        );
        eprintln!("skipped: xvfb-run or ImageMagick (import, identify) is not installed");
        return;
    }
    let target = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target");
    let shot = target.join("gui-smoke.png");
    let _ = std::fs::remove_file(&shot);
    let home_tmp = rocescope_testkit::temp_dir("gui-smoke");
    let home = home_tmp.path();
    // The window lives 10 s; the screenshot is taken after 7 s of running.
    let script = format!(
        "{bin} gui --sim teaching-basic --exit-after 10 & pid=$!; sleep 7; \
         import -window root {shot}; wait $pid",
        bin = env!("CARGO_BIN_EXE_rocescope"),
        shot = shot.display()
    );
    let out = Command::new("xvfb-run")
        .args(["-a", "-s", "-screen 0 1600x1000x24", "sh", "-c", &script])
        // A fresh config dir: no layout persisted by earlier runs.
        .env("XDG_CONFIG_HOME", home)
        .env("XDG_DATA_HOME", home)
        .env("LIBGL_ALWAYS_SOFTWARE", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "rocescope gui failed: {stderr}");
    assert!(shot.exists(), "no screenshot: {stderr}");
    let id = Command::new("identify")
        .args(["-format", "%k"])
        .arg(&shot)
        .output()
        .unwrap();
    let colours: u64 = String::from_utf8_lossy(&id.stdout)
        .trim()
        .parse()
        .unwrap_or(0);
    assert!(
        colours > 200,
        "the screenshot looks blank: {colours} distinct colours ({})",
        shot.display()
    );
}
