/**
 * `sysinfo` (one POSIX shell script reading /proc and friends, no sudo) and `systemd` (systemctl
 * and journalctl, after checking that systemd is what runs the machine — on a host or container
 * without it the tool answers at once with a message saying so, instead of a hanging or cryptic
 * systemctl).
 */
import { ToolError } from "./errors.js"
import { shellQuote } from "./exec.js"

export const SYSINFO_SCRIPT = [
  `printf 'hostname: %s\\n' "$(hostname 2>/dev/null || cat /proc/sys/kernel/hostname)"`,
  `if [ -r /etc/os-release ]; then . /etc/os-release; printf 'os: %s\\n' "\${PRETTY_NAME:-$NAME}"; fi`,
  `printf 'kernel: %s\\n' "$(uname -srm)"`,
  `printf 'user: %s (uid %s)\\n' "$(id -un)" "$(id -u)"`,
  `if [ -r /proc/uptime ]; then awk '{s=int($1); printf "uptime: %dd %dh %dm\\n", s/86400, (s%86400)/3600, (s%3600)/60}' /proc/uptime; fi`,
  `if [ -r /proc/loadavg ]; then printf 'load: %s\\n' "$(cut -d' ' -f1-3 /proc/loadavg)"; fi`,
  `printf 'cpus: %s\\n' "$(nproc 2>/dev/null || grep -c ^processor /proc/cpuinfo)"`,
  `if [ -r /proc/meminfo ]; then awk '/^MemTotal:/{t=$2} /^MemAvailable:/{a=$2} END{printf "memory: %d MiB total, %d MiB available\\n", t/1024, a/1024}' /proc/meminfo; fi`,
  `df -P / 2>/dev/null | awk 'NR==2{printf "disk /: %d MiB total, %d MiB free (%s used)\\n", $2/1024, $4/1024, $5}'`,
  `if [ -d /run/systemd/system ]; then echo 'init: systemd'; else printf 'init: %s (not systemd)\\n' "$(cat /proc/1/comm 2>/dev/null || echo unknown)"; fi`
].join("\n")

/** Prints `systemd` when systemd runs the machine (sd_booted's test), else `no-systemd <PID 1's name>`. */
export const SYSTEMD_PROBE =
  `if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then echo systemd; ` +
  `else printf 'no-systemd %s\\n' "$(cat /proc/1/comm 2>/dev/null || echo unknown)"; fi`

export const SYSTEMD_ACTIONS = [
  "status",
  "is-active",
  "is-enabled",
  "list-units",
  "list-failed",
  "logs",
  "start",
  "stop",
  "restart",
  "reload",
  "enable",
  "disable"
] as const
export type SystemdAction = (typeof SYSTEMD_ACTIONS)[number]

/** Actions that change the system (run with sudo unless the caller says otherwise). */
export const MUTATING: ReadonlySet<SystemdAction> = new Set(["start", "stop", "restart", "reload", "enable", "disable"])

const UNIT = /^[A-Za-z0-9@._:\\-]{1,256}$/

/** The command line for an action. */
export const systemdCommand = (action: SystemdAction, unit: string | undefined, lines: number): string => {
  const needsUnit = action !== "list-units" && action !== "list-failed"
  if (needsUnit && (unit === undefined || unit === "")) {
    throw new ToolError(`systemd ${action} needs a unit (e.g. nginx.service)`)
  }
  if (unit !== undefined && unit !== "" && !UNIT.test(unit)) {
    throw new ToolError(`not a unit name: ${JSON.stringify(unit)}`)
  }
  const u = unit === undefined || unit === "" ? "" : ` -- ${shellQuote(unit)}`
  switch (action) {
    case "logs":
      return `journalctl --no-pager -n ${lines} -u ${shellQuote(unit!)}`
    case "list-units":
      return `systemctl --no-pager --no-ask-password --plain list-units --type=service${
        unit ? ` ${shellQuote(unit)}` : ""
      }`
    case "list-failed":
      return "systemctl --no-pager --no-ask-password --plain list-units --state=failed"
    case "status":
      return `systemctl --no-pager --no-ask-password status -n ${lines}${u}`
    default:
      return `systemctl --no-pager --no-ask-password ${action}${u}`
  }
}
