/* Reno through the kfuncs, keeping counts in every kind of map the simulator provides:
 * an array indexed by CA state, a hash keyed by the event number, per-socket storage
 * created on first use, and globals. The tests read them back as the run's internals. */
#include <ccbench/tcp_ca.h>

char _license[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 5);
	__type(key, __u32);
	__type(value, __u64);
} state_entries SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u64);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} acks SEC(".maps");

__u64 losses = 0;   /* CA_EVENT_LOSS and entries into Recovery, from the array and hash */
__u64 acks_seen = 0; /* the largest per-socket ACK count */

SEC("struct_ops")
void BPF_PROG(maps_set_state, struct sock *sk, __u8 new_state)
{
	__u32 key = new_state;
	__u64 *n = bpf_map_lookup_elem(&state_entries, &key);

	if (n)
		__sync_fetch_and_add(n, 1);
	if (new_state == TCP_CA_Recovery)
		losses += 1;
}

SEC("struct_ops")
void BPF_PROG(maps_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	__u32 key = ev;
	__u64 one = 1, *n = bpf_map_lookup_elem(&events, &key);

	if (n)
		*n += 1;
	else
		bpf_map_update_elem(&events, &key, &one, BPF_NOEXIST);
}

SEC("struct_ops")
void BPF_PROG(maps_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	__u64 *n = bpf_sk_storage_get(&acks, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);

	if (n) {
		*n += 1;
		if (*n > acks_seen)
			acks_seen = *n;
	}
	tcp_reno_cong_avoid(sk, ack, acked);
}

SEC("struct_ops")
__u32 BPF_PROG(maps_ssthresh, struct sock *sk)
{
	return tcp_reno_ssthresh(sk);
}

SEC("struct_ops")
__u32 BPF_PROG(maps_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops maps = {
	.set_state = (void *)maps_set_state,
	.cwnd_event = (void *)maps_cwnd_event,
	.cong_avoid = (void *)maps_cong_avoid,
	.ssthresh = (void *)maps_ssthresh,
	.undo_cwnd = (void *)maps_undo_cwnd,
	.name = "ccb_maps",
};
