//! `nsadmin`: mqadmin's name-server commands for any RocketMQ name server, plus `diff`.
//! Everything lives in [`namesrv::admin`]; this binary reads the arguments and the
//! environment, runs the command on a single-threaded runtime and exits with its code.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let env = namesrv::admin::Env::from_process();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("nsadmin: cannot start the runtime: {e}");
            return ExitCode::from(namesrv::admin::EXIT_UNREACHABLE);
        }
    };
    let code = runtime.block_on(async {
        let (mut out, mut err) = (std::io::stdout().lock(), std::io::stderr().lock());
        namesrv::admin::run(&args, &env, &mut out, &mut err).await
    });
    ExitCode::from(code)
}
