# One background process on this machine, owned by Terraform: created = started and healthy,
# destroyed = its whole process group stopped. region-local and llm-local are thin wrappers.

locals {
  # The process's own environment rides on its command line (`env K=V ... CMD` execs CMD with
  # them added), so the trigger records it and a change of it restarts the process.
  command = length(var.env) == 0 ? var.command : concat(["env"], [for k in sort(keys(var.env)) : "${k}=${var.env[k]}"], var.command)
  # Each argument single-quoted for the shell (a ' inside becomes '\'').
  quoted_command = join(" ", [for arg in local.command : format("'%s'", replace(arg, "'", "'\\''"))])
  quoted_ready   = join(" ", [for arg in var.ready_command : format("'%s'", replace(arg, "'", "'\\''"))])
  pid_file       = "${var.run_dir}/${var.name}.pid"
  log_file       = "${var.run_dir}/${var.name}.log"
  ready_file     = "${var.run_dir}/${var.name}.ready"
}

resource "null_resource" "process" {
  # Everything the destroy-time provisioner needs lives here (it may read only `self`).
  # Nothing volatile: an unchanged configuration must plan no changes.
  triggers = {
    name        = var.name
    command     = local.quoted_command
    health_url  = var.health_url
    pid_file    = local.pid_file
    log_file    = local.log_file
    ready_file  = local.ready_file
    match       = var.match
    stop_script = "${path.module}/stop.sh"
    stop_grace  = var.stop_grace_s
  }

  provisioner "local-exec" {
    command = "bash '${path.module}/start.sh' ${local.quoted_command}"
    environment = {
      NAME        = var.name
      RUN_DIR     = var.run_dir
      PID_FILE    = local.pid_file
      LOG_FILE    = local.log_file
      READY_FILE  = local.ready_file
      HEALTH_URL  = var.health_url
      READY_AFTER = var.ready_timeout_s
      READY_CMD   = local.quoted_ready
    }
  }

  provisioner "local-exec" {
    when    = destroy
    command = "bash '${self.triggers.stop_script}'"
    environment = {
      NAME       = self.triggers.name
      PID_FILE   = self.triggers.pid_file
      READY_FILE = self.triggers.ready_file
      MATCH      = self.triggers.match
      GRACE_S    = self.triggers.stop_grace
    }
  }
}
