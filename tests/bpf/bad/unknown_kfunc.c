/* Calls a kfunc that the kernel's tcp_ca kfunc set does not have: a loader must refuse
 * the object, since the call has nothing to bind to. */
#include <ccbench/tcp_ca.h>

char _license[] SEC("license") = "GPL";

extern __u32 bpf_ccbench_no_such_kfunc(struct sock *sk) __ksym;

SEC("struct_ops")
__u32 BPF_PROG(bad_ssthresh, struct sock *sk)
{
	return bpf_ccbench_no_such_kfunc(sk);
}

SEC("struct_ops")
void BPF_PROG(bad_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
}

SEC("struct_ops")
__u32 BPF_PROG(bad_undo_cwnd, struct sock *sk)
{
	return tcp_sk(sk)->snd_cwnd;
}

SEC(".struct_ops")
struct tcp_congestion_ops bad_kfunc = {
	.ssthresh = (void *)bad_ssthresh,
	.cong_avoid = (void *)bad_cong_avoid,
	.undo_cwnd = (void *)bad_undo_cwnd,
	.name = "ccb_bad_kfunc",
};
