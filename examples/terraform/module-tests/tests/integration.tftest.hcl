# Applies the module to the cluster KUBE_CONFIG_PATH names (the namespace comes from
# TF_VAR_namespace), checks the result, and lets `terraform test` destroy it again.

variables {
  name = "web"
  parameters = {
    REPLICAS = "1"
    MESSAGE  = "from terraform test"
  }
}

run "deploys_the_instance" {
  command = apply

  assert {
    condition     = output.status == "COMPLETE"
    error_message = "the deploy plan did not complete: ${output.status}"
  }

  assert {
    condition     = kudo_instance.this.effective_parameters["MESSAGE"] == "from terraform test"
    error_message = "MESSAGE did not reach the instance"
  }

  assert {
    condition     = length([for o in kudo_instance.this.objects : o if o.kind == "Deployment"]) == 1
    error_message = "no Deployment among the instance's objects"
  }
}

run "updates_a_parameter" {
  command = apply

  variables {
    parameters = {
      REPLICAS = "2"
      MESSAGE  = "from terraform test"
    }
  }

  assert {
    condition     = kudo_instance.this.effective_parameters["REPLICAS"] == "2"
    error_message = "REPLICAS was not updated"
  }
}
